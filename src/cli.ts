import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { flagRefusal, settingFlags } from './config/flags.ts';
import { type Config, ConfigError, loadConfig } from './config/load.ts';
import { VERSION } from './config/version.ts';
import { type Command, COMMANDS, commandHelp, DEFAULT_MAX_ERRORS, mainHelp } from './cli/commands.ts';
import { CommandFailed, UsageError } from './cli/output.ts';
import type * as BulkModule from './store/bulk.ts';
import { StoreOpenError, StoreUnavailableError } from './store/store.ts';

// Each command is loaded when it runs (below), as `serve` is: --help, --version and a usage error
// load neither database driver nor the checks of a record, and start in a fraction of the time.
/** The bulk store's module, once a command has loaded it: its RestoreRefused is a failure, not a crash. */
let bulk: typeof BulkModule | undefined;

/** `user-records [COMMAND] ...`: the service (serve, the default) and the operator's commands. */
async function main(argv: string[]): Promise<number | 'serving'> {
  const [first, second] = argv;
  const asked = first === 'help' ? COMMANDS.find((candidate) => candidate.name === second) : undefined;
  if (asked !== undefined) return print(commandHelp(asked));
  if (first === '--help' || first === '-h' || first === 'help') return print(mainHelp());
  if (first === '--version') return print(`${VERSION}\n`);
  const named = first !== undefined && !first.startsWith('-');
  const command = named ? COMMANDS.find((candidate) => candidate.name === first) : COMMANDS[0];
  if (command === undefined) {
    throw new UsageError(
      `unknown command ${JSON.stringify(first)}; the commands are ${COMMANDS.map((c) => c.name).join(', ')}`,
    );
  }
  const rest = named ? argv.slice(1) : argv;
  if (rest.includes('--help') || rest.includes('-h')) return print(commandHelp(command));
  if (command.name === 'serve') {
    // Loaded only here: the other commands need none of the HTTP side.
    const { runServer } = await import('./serve.ts');
    runServer(rest, 'user-records serve');
    return 'serving';
  }
  const { values, positionals, settingsArgv } = parse(command, rest);
  const config = loadConfig(process.env, settingsArgv);
  return run(command, config, values, positionals);
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}

type Values = Record<string, string | boolean | undefined>;

/** The command's own flags and the settings' flags, apart; a flag or argument it does not take is a usage error. */
function parse(command: Command, argv: string[]): { values: Values; positionals: string[]; settingsArgv: string[] } {
  const own = Object.fromEntries(command.options.map((option) => [option.flag, { type: option.type }]));
  const settings = settingFlags();
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...settings, ...own }, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError(flagRefusal(error, `user-records ${command.name}`));
  }
  const settingsArgv: string[] = [];
  const values: Values = {};
  for (const [flag, value] of Object.entries(parsed.values)) {
    if (flag in own) values[flag] = value as string | boolean;
    else settingsArgv.push(`--${flag}`, value as string);
  }
  const wanted = command.args === '' ? 0 : command.args.split(' ').length;
  const optional = command.args.startsWith('[');
  if (parsed.positionals.length > wanted || (!optional && parsed.positionals.length < wanted)) {
    throw new UsageError(
      `user-records ${command.name} takes ${command.args === '' ? 'no arguments' : command.args}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.join(' ')}`,
    );
  }
  return { values, positionals: parsed.positionals, settingsArgv };
}

function count(text: string | boolean | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  if (typeof text !== 'string' || !/^[0-9]{1,9}$/.test(text))
    throw new UsageError(`--${flag} must be a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

async function run(command: Command, config: Config, values: Values, positionals: string[]): Promise<number> {
  const quiet = values.quiet === true;
  const text = (name: string) => values[name] as string | undefined;
  bulk = await import('./store/bulk.ts');
  const database = (await import('./store/database.ts')).openDatabase(config);
  switch (command.name) {
    case 'import': {
      const { importCommand } = await import('./cli/import.ts');
      return importCommand(database, {
        file: positionals[0] as string,
        format: text('format'),
        skipInvalid: values['skip-invalid'] === true,
        rejects: text('rejects'),
        maxErrors: count(values['max-errors'], 'max-errors', DEFAULT_MAX_ERRORS),
        quiet,
      });
    }
    case 'export': {
      const { exportCommand } = await import('./cli/export.ts');
      const query: Record<string, string> = {};
      for (const option of command.options) {
        const value = values[option.flag];
        if (option.flag !== 'format' && typeof value === 'string') query[option.flag] = value;
      }
      const raw = values.raw === true;
      return exportCommand(database, { file: positionals[0], format: text('format'), query, raw, quiet });
    }
    case 'backup': {
      const { backupCommand } = await import('./cli/backup.ts');
      return backupCommand(database, { file: positionals[0] as string, quiet });
    }
    case 'restore': {
      const { restoreCommand } = await import('./cli/restore.ts');
      return restoreCommand(database, { file: positionals[0] as string, replace: values.replace === true, quiet });
    }
    case 'migrate':
      return (await import('./cli/maintenance.ts')).migrateCommand(database, { quiet });
    case 'check':
      return (await import('./cli/maintenance.ts')).checkCommand(database, { quiet });
    default:
      throw new UsageError(`unknown command ${command.name}`);
  }
}

/** The one line an operator reads, and the exit code: 2 bad usage, 1 failed. */
function failure(error: unknown): { line: string; code: number } {
  if (error instanceof UsageError) return { line: `${error.message}`, code: 2 };
  if (error instanceof ConfigError) return { line: error.message, code: 2 };
  if (
    error instanceof CommandFailed ||
    error instanceof StoreOpenError ||
    error instanceof StoreUnavailableError ||
    (bulk !== undefined && error instanceof bulk.RestoreRefused)
  ) {
    return { line: error.message, code: 1 };
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return { line: `${(error as Error).message} (${code})`, code: 1 };
  return { line: (error as Error).stack ?? String(error), code: 1 };
}

// A reader that stops early (`export | head`) closes the pipe: that ends the command quietly. Any
// other fault of standard output (a full disk) ends it with one line, and nothing more is written.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  process.stderr.write(`user-records: cannot write standard output: ${error.message}\n`);
  process.exit(1);
});

main(process.argv.slice(2)).then(
  async (code) => {
    if (code === 'serving') return;
    // Ended here rather than by the event loop running dry: Node's own way out closes its signal
    // handlers first and then takes a while to tear down (tens of ms after a large import), and a
    // SIGTERM then would end with 143 a command that stored its data and said so. What the command
    // wrote goes out first.
    for (const stream of [process.stdout, process.stderr]) {
      if (stream.writableLength > 0) await once(stream, 'drain');
    }
    process.exit(code);
  },
  (error: unknown) => {
    const { line, code } = failure(error);
    process.stderr.write(`user-records: ${line}\n`);
    process.exitCode = code;
  },
);
