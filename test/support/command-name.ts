/** `'PutItem'` or `'PutItemCommand'` → `'PutItemCommand'` (the SDK's `context.commandName`). */
export function commandName(name: string): string {
  return name === '*' || name.endsWith('Command') ? name : `${name}Command`;
}
