import { settingsHelp } from '../config/help.ts';
import { fieldList, RECORD_FIELDS } from '../record/fields.ts';
import { ListQuery } from '../users/schemas.ts';
import { FORMATS } from './readers.ts';

/** A flag of one command (the settings' flags come from SETTINGS). */
export interface CommandOption {
  flag: string;
  type: 'string' | 'boolean';
  /** How the value is written in --help (`FILE`, `N`). */
  value?: string;
  default?: string;
  help: string;
}

export interface Command {
  name: string;
  /** The positional arguments, as --help shows them. */
  args: string;
  summary: string;
  /** More lines for its own --help. */
  details?: string[];
  options: CommandOption[];
  /** The settings it uses, shown in its --help (every one is accepted). */
  settings: 'all' | readonly string[];
}

/** At most this many bad rows are listed by an import (the rest are counted). */
export const DEFAULT_MAX_ERRORS = 100;

const QUIET: CommandOption = { flag: 'quiet', type: 'boolean', help: 'no progress on standard error' };
const DATABASE = ['DATABASE_URL', 'DATABASE_TIMEOUT_MS'];
const FORMAT_LIST = FORMATS.join('|');

/** The parameters of GET /users an export takes, with their rules, from the API's own schema (not pages). */
const FILTERS: CommandOption[] = Object.entries(ListQuery.properties)
  .filter(([name]) => !['limit', 'after', 'cursor'].includes(name))
  .map(([name, schema]) => ({
    flag: name,
    type: 'string' as const,
    value: 'VALUE',
    help: ((schema as { description?: string }).description ?? name).replaceAll('`', '').split('. ')[0] ?? name,
  }));

/** Every command of `user-records`, once: the parser and every --help derive from this table. */
export const COMMANDS: readonly Command[] = [
  {
    name: 'serve',
    args: '',
    summary: 'run the service (the default command; what npm start runs)',
    options: [],
    settings: 'all',
  },
  {
    name: 'import',
    args: 'FILE|-',
    summary: 'store the records of a CSV, JSON or NDJSON file (- for standard input), all or none',
    details: [
      `CSV needs a header row naming ${fieldList(RECORD_FIELDS, 'and')} in any order. JSON is {"data":[...]} as GET /users`,
      'answers, or a bare array. NDJSON is one JSON object a line. Each row is checked by the rules of',
      'POST /users. Without --skip-invalid nothing is stored if any row is bad, and the bad rows are listed',
      'with their line, field and reason. Records get ids in file order; the import is on disk when the',
      'command says it is done, and one stopped before that leaves nothing of it.',
    ],
    options: [
      {
        flag: 'format',
        type: 'string',
        value: FORMAT_LIST,
        default: 'from the extension',
        help: 'the format of the file',
      },
      {
        flag: 'skip-invalid',
        type: 'boolean',
        help: 'store the good rows, and write the bad ones to the rejects file in the input format',
      },
      {
        flag: 'rejects',
        type: 'string',
        value: 'FILE',
        default: 'FILE.rejects.EXT (rejects.EXT for standard input)',
        help: 'where --skip-invalid writes the bad rows',
      },
      {
        flag: 'max-errors',
        type: 'string',
        value: 'N',
        default: String(DEFAULT_MAX_ERRORS),
        help: 'bad rows listed at most (all are counted)',
      },
      QUIET,
    ],
    settings: DATABASE,
  },
  {
    name: 'export',
    args: '[FILE]',
    summary: 'write the records (or those the filters pick) to a file or standard output, from one snapshot',
    details: [
      '--format json writes byte for byte what GET /users answers for the same filters and fields.',
      "--format csv is safe to open in a spreadsheet (OWASP's advice on CSV injection): a value that starts",
      "with = + - @, a tab or a carriage return gets a leading ', shown as text instead of run as a formula,",
      'and one with a ; or a tab is quoted. --raw writes every value exactly as stored.',
    ],
    options: [
      {
        flag: 'format',
        type: 'string',
        value: FORMAT_LIST,
        default: 'from the extension, else json',
        help: 'the format to write',
      },
      {
        flag: 'raw',
        type: 'boolean',
        help: 'csv: every value exactly as stored, formulas too (for a program that reads the file as data)',
      },
      ...FILTERS,
      QUIET,
    ],
    settings: DATABASE,
  },
  {
    name: 'backup',
    args: 'FILE',
    summary:
      'write a consistent backup while the service runs: records with ids, times and versions, keys, change version, checksum',
    details: ['One format for both stores: a backup of SQLite restores into PostgreSQL and back.'],
    options: [QUIET],
    settings: DATABASE,
  },
  {
    name: 'restore',
    args: 'FILE|-',
    summary: 'put a backup back (- for standard input), whole or not at all',
    details: [
      'The backup is read once, each line checked as it comes (fields within the ranges the service',
      'works with, lines at most 1 MiB), in one transaction that commits only when its last line',
      'matches the counts and checksum of all it read: a file cut short or changed leaves the database',
      'as it was. Stop the service first (or restart it after): it keeps a copy of the listing it has',
      'read. GET /users then answers the same bytes as at the moment of the backup, under a new ETag',
      '(a restore begins a new history, so no ETag read before it can name other content).',
    ],
    options: [
      {
        flag: 'replace',
        type: 'boolean',
        help: 'replace the records of a database that has some (refused without it)',
      },
      QUIET,
    ],
    settings: DATABASE,
  },
  {
    name: 'migrate',
    args: '',
    summary: 'bring the schema up to date and show its version',
    options: [QUIET],
    settings: DATABASE,
  },
  {
    name: 'check',
    args: '',
    summary: "check the database's integrity and count its records",
    options: [QUIET],
    settings: DATABASE,
  },
];

/** `user-records --help`. */
export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => `${command.name} ${command.args}`.length));
  return [
    'Usage: user-records [COMMAND] [ARGS] [--flag value ...]',
    '',
    'Commands:',
    ...COMMANDS.map((command) => `  ${`${command.name} ${command.args}`.padEnd(width)}  ${command.summary}`),
    '',
    'Every command reads the settings of the service, each an environment variable or a flag (the',
    'flag wins); `user-records serve --help` lists them all.',
    '',
    '  --help       this text; user-records COMMAND --help: that command',
    '  --version    the version of the service',
    '',
    'Exit codes: 0 done, 1 failed (with its reason), 2 bad usage.',
    '',
  ].join('\n');
}

/** `user-records COMMAND --help`. */
export function commandHelp(command: Command): string {
  const lines = [
    `Usage: user-records ${command.name}${command.args === '' ? '' : ` ${command.args}`} [--flag value ...]`,
    '',
    `${command.summary[0]?.toUpperCase()}${command.summary.slice(1)}.`,
  ];
  if (command.details !== undefined) lines.push('', ...command.details);
  if (command.options.length > 0) {
    lines.push('', 'Flags:');
    for (const option of command.options) {
      const value = option.value === undefined ? '' : ` ${option.value}`;
      const fallback = option.default === undefined ? '' : ` (default: ${option.default})`;
      lines.push(`  --${option.flag}${value}${fallback}`, `      ${option.help}`);
    }
  }
  lines.push(
    '',
    command.settings === 'all'
      ? 'Settings (environment variable or flag; the flag wins):'
      : 'Settings it uses (environment variable or flag; every other setting is accepted too):',
    '',
  );
  lines.push(...settingsHelp(command.settings === 'all' ? undefined : command.settings));
  lines.push('', '  --help       this text', '');
  return lines.join('\n');
}
