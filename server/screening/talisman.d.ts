// Type of the one talisman module the matcher uses (the package ships no declarations).
declare module 'talisman/phonetics/double-metaphone' {
  /** [primary, secondary] Double Metaphone keys of an uppercase word. */
  export default function doubleMetaphone(word: string): [string, string];
}
