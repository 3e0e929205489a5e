/** Whether a function's own parameter list ends with a rest parameter (`...ids`), read from its source. */
export function hasRestParameter(fn: (...args: never[]) => unknown): boolean {
  const source = Function.prototype.toString.call(fn);
  const open = source.indexOf('(');
  let depth = 0;
  for (let i = open; i >= 0 && i < source.length; i++) {
    const c = source[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (--depth === 0) return false;
    } else if (depth === 1 && source.startsWith('...', i)) return true;
  }
  return false;
}
