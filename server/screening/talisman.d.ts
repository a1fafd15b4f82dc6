// Types of the talisman modules in use (the package ships no declarations).
declare module 'talisman/phonetics/double-metaphone' {
  /** [primary, secondary] Double Metaphone keys of an uppercase word. */
  export default function doubleMetaphone(word: string): [string, string];
}

// Used by the screening benchmark's baseline (the OFAC-style Soundex comparison), not by the matcher.
declare module 'talisman/phonetics/soundex' {
  /** The four-character American Soundex code of a word. */
  export default function soundex(word: string): string;
}
