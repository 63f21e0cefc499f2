/** A table of already formatted cells; `right` marks the columns aligned right (numbers). */
export interface Table {
  header: string[];
  right: boolean[];
  rows: string[][];
}

/** Plain text for the terminal: padded columns, a rule under the header. */
export function toText(table: Table): string {
  const widths = table.header.map((title, i) =>
    Math.max(title.length, ...table.rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (table.right[i] === true ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(table.header), widths.map((width) => '-'.repeat(width)).join('  '), ...table.rows.map(line)].join('\n');
}

/** A GitHub Markdown table; pipes inside cells are escaped. */
export function toMarkdown(table: Table): string {
  const line = (cells: string[]) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  const rule = `|${table.right.map((right) => (right ? '---:' : '---')).join('|')}|`;
  return [line(table.header), rule, ...table.rows.map(line)].join('\n');
}
