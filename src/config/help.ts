import { flagOf, SETTINGS, type Setting } from './settings.ts';

const DEFINITIONS = Object.values(SETTINGS) as Array<Setting<unknown>>;

/** A setting's default as docs/operations.md shows it. */
function defaultOf(definition: Setting<unknown>): string {
  return definition.defaultText ?? (definition.default === undefined ? 'none' : `\`${definition.default}\``);
}

/** Markdown to plain text: code marks and links dropped. */
function plain(markdown: string): string {
  return markdown.replaceAll('`', '').replace(/\[([^\]]+)\]\([^)]+\)/g, '$1');
}

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** What a setting does, and its rule where the words do not already say it. */
function meaning(definition: Setting<unknown>): string {
  return definition.kind.listed ? `${definition.help}. ${capital(definition.kind.rule)}` : definition.help;
}

/** The settings table of docs/operations.md, row by row from SETTINGS (scripts/generate-docs.ts writes it; a test checks it). */
export function settingsTable(): string {
  const rows = DEFINITIONS.map(
    (definition) =>
      `| \`${definition.env}\` | \`--${flagOf(definition)}\` | ${defaultOf(definition)} | ${meaning(definition)} |`,
  );
  return ['| Variable | Flag | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** `--help` of the server: every setting with its flag, default and rule. */
export function helpText(command: string): string {
  const lines = [
    `Usage: ${command} [--flag value ...]`,
    '',
    'Every setting is an environment variable and a flag (the flag wins):',
    '',
  ];
  lines.push(...settingsHelp());
  lines.push('', '  --help       this text', '  --version    the version of the service');
  return `${lines.join('\n')}\n`;
}

/** The `--help` lines of these settings (all by default): flag, variable, default, and what it does. */
export function settingsHelp(only?: readonly string[]): string[] {
  const lines: string[] = [];
  for (const definition of DEFINITIONS) {
    if (only !== undefined && !only.includes(definition.env)) continue;
    lines.push(`  --${flagOf(definition)} (${definition.env}), default: ${plain(defaultOf(definition))}`);
    lines.push(`      ${plain(meaning(definition))}.`);
  }
  return lines;
}
