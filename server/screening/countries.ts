// English names of the known country codes (shared/countries), and the reverse lookup used to turn the
// country names written in sanctions-list remarks into codes.
import { COUNTRY_CODES } from '../../shared/countries';

const names = new Intl.DisplayNames(['en'], { type: 'region' });

export const COUNTRIES: ReadonlyArray<{ code: string; name: string }> = COUNTRY_CODES.map((code) => ({ code, name: names.of(code) ?? code })).sort((a, b) =>
  a.name.localeCompare(b.name),
);

const BY_NAME = new Map<string, string>();
for (const { code, name } of COUNTRIES) BY_NAME.set(normaliseCountryName(name), code);
// Spellings used in OFAC remarks that differ from the CLDR English names.
const ALIASES: Record<string, string> = {
  BURMA: 'MM',
  IRAN: 'IR',
  RUSSIA: 'RU',
  SYRIA: 'SY',
  'NORTH KOREA': 'KP',
  'KOREA NORTH': 'KP',
  'SOUTH KOREA': 'KR',
  'KOREA SOUTH': 'KR',
  VENEZUELA: 'VE',
  BOLIVIA: 'BO',
  TANZANIA: 'TZ',
  LAOS: 'LA',
  MOLDOVA: 'MD',
  VIETNAM: 'VN',
  PALESTINIAN: 'PS',
  'WEST BANK': 'PS',
  GAZA: 'PS',
  'CONGO DEMOCRATIC REPUBLIC OF THE': 'CD',
  'CONGO REPUBLIC OF THE': 'CG',
  'IVORY COAST': 'CI',
  'COTE D IVOIRE': 'CI',
  'UNITED KINGDOM': 'GB',
  'UNITED STATES': 'US',
  TURKEY: 'TR',
  'CZECH REPUBLIC': 'CZ',
  MACEDONIA: 'MK',
  'NORTH MACEDONIA THE REPUBLIC OF': 'MK',
  KOSOVO: 'XK',
  'BOSNIA AND HERZEGOVINA': 'BA',
  'ST KITTS AND NEVIS': 'KN',
  UAE: 'AE',
  ESWATINI: 'SZ',
  'CABO VERDE': 'CV',
};
for (const [name, code] of Object.entries(ALIASES)) BY_NAME.set(name, code);

function normaliseCountryName(name: string): string {
  return name
    .toUpperCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Z ]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** ISO code for a country name as written in list remarks ("Iran", "Korea, North"), or null. */
export function countryCodeFromName(name: string): string | null {
  return BY_NAME.get(normaliseCountryName(name)) ?? null;
}
