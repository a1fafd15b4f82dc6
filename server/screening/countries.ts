// ISO 3166-1 alpha-2 country codes (plus XK, Kosovo) with English names, and the reverse lookup used to turn
// the country names written in sanctions-list remarks into codes.
const CODES = (
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ ' +
  'BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR ' +
  'CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
  'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ' +
  'ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ ' +
  'LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ ' +
  'MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF ' +
  'PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI ' +
  'SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR ' +
  'TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW'
).split(' ');

const names = new Intl.DisplayNames(['en'], { type: 'region' });

export const COUNTRIES: ReadonlyArray<{ code: string; name: string }> = CODES.map((code) => ({ code, name: names.of(code) ?? code })).sort((a, b) =>
  a.name.localeCompare(b.name),
);

const CODE_SET = new Set(CODES);
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

export function isCountryCode(value: string): boolean {
  return CODE_SET.has(value);
}

/** ISO code for a country name as written in list remarks ("Iran", "Korea, North"), or null. */
export function countryCodeFromName(name: string): string | null {
  return BY_NAME.get(normaliseCountryName(name)) ?? null;
}

export function countryName(code: string): string {
  return names.of(code) ?? code;
}
