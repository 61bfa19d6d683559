/** `--name N` from the command line, or `fallback`. */
export const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  const value = i === -1 ? undefined : Number(process.argv[i + 1])
  return value !== undefined && Number.isFinite(value) ? value : fallback
}

/** `--name a,b` from the command line as a list, or undefined. */
export const list = (name: string): ReadonlyArray<string> | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? undefined : (process.argv[i + 1] ?? "").split(",").filter((s) => s !== "")
}
