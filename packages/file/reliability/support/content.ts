/** Message contents that can be checked after the fact: a pure function of the message ID. */
export const contentFor = (messageId: string): string => {
  let h = 2166136261
  for (let i = 0; i < messageId.length; i++) h = Math.imul(h ^ messageId.charCodeAt(i), 16777619) >>> 0
  const length = 20 + (h % 580)
  const unit = `${messageId} é✓ "q" \\ `
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length)
}
