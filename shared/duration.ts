// Durations in the words an agent relays to a person, shared by the server's and the gate's copy so both
// say the same thing about the same number of seconds.

/** A duration as a person says it: "one hour", "2 hours", "30 minutes", "45 seconds". */
export function durationText(seconds: number): string {
  const unit = (n: number, name: string) => (n === 1 ? `one ${name}` : `${n} ${name}s`);
  if (seconds % 3600 === 0) return unit(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return unit(seconds / 60, 'minute');
  return unit(seconds, 'second');
}
