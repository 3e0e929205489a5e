/** Aligned plain-text tables for a terminal. */

/** Options of {@link renderTable}. */
export interface TableOptions {
  /** Cut lines to this many characters (the last column is shortened); none when omitted. */
  maxWidth?: number;
}

const GAP = '  ';

/**
 * Renders rows under a header as aligned columns separated by two spaces; the last column is
 * not padded. Control characters in cells are escaped, so a value cannot break the layout.
 */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[], options: TableOptions = {}): string[] {
  const cells = [headers, ...rows].map((row) => row.map(cleanCell));
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells.map((row) => {
    const line = row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join(GAP);
    return fit(line.trimEnd(), options.maxWidth);
  });
}

/** Renders `label  value` pairs with the values aligned. */
export function renderFields(fields: readonly (readonly [label: string, value: string])[], options: TableOptions = {}): string[] {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => fit(`${`${label}:`.padEnd(width + 1)}${GAP}${cleanCell(value)}`, options.maxWidth));
}

/** Escapes control characters (newlines, terminal escape sequences) in a cell. */
export function cleanCell(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => {
    const escaped = JSON.stringify(char);
    return escaped.slice(1, -1);
  });
}

function fit(line: string, maxWidth: number | undefined): string {
  return maxWidth !== undefined && maxWidth > 1 && line.length > maxWidth ? `${line.slice(0, maxWidth - 1)}…` : line;
}
