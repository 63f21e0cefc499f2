import { flagOf, SETTINGS, type Setting } from './settings.ts';

/** The flags of every setting, as util.parseArgs takes them. */
export function settingFlags(): Record<string, { type: 'string' }> {
  const definitions = Object.values(SETTINGS) as Array<Setting<unknown>>;
  return Object.fromEntries(definitions.map((definition) => [flagOf(definition), { type: 'string' as const }]));
}

/** util.parseArgs's refusal of a flag or an argument in one sentence, and where `usage`'s flags are listed. */
export function flagRefusal(error: unknown, usage: string): string {
  // Node's text for an unknown flag goes on about '--' with an unbalanced quote: its first sentence says it.
  const [first = ''] = (error as Error).message.split('\n');
  return `${first.replace(/\. To specify a positional argument .*$/, '')} (see ${usage} --help)`;
}
