// The screening-quality bench on a small sample (CI): the labelled set builds from the real bundled list, and
// recall and false-positive rate at the default threshold hold on it. `npm run bench:screening` runs it in full.
import { buildLabelledSet, runScreeningBench } from '../bench/screeningSet';
import { bundledNames } from '../../server/sanctions/bundled';
import { parseSdnCsv } from '../../server/screening/nameList';

jest.setTimeout(120_000);

describe('screening quality bench (small sample)', () => {
  it('builds positives in every variant, with and without qualifiers, and negatives that share tokens with listed names', () => {
    const b = bundledNames();
    const set = buildLabelledSet(parseSdnCsv(b.sdnCsv, b.altCsv), { positives: 90, negatives: 100, seed: 11 });
    const positives = set.filter((s) => s.listedUid);
    expect(positives).toHaveLength(90);
    expect(new Set(positives.map((p) => p.variant))).toEqual(
      new Set(['exact', 'case_diacritics', 'token_order', 'missing_middle', 'extra_middle', 'transliteration', 'typo1', 'typo2', 'alias']),
    );
    expect(positives.some((p) => p.qualifiers && p.subject.dobYear !== null)).toBe(true);
    expect(positives.some((p) => !p.qualifiers && p.subject.dobYear === null && p.subject.country === null)).toBe(true);
    expect(set.filter((s) => s.variant === 'negative_shared_token').length).toBeGreaterThanOrEqual(30);
  });

  it('meets recall ≥ 0.98 and a false-positive rate ≤ 0.5 % at the default threshold on a sample', () => {
    const result = runScreeningBench({ positives: 300, negatives: 1000, seed: 5, thresholds: [0.8, 0.85, 0.9] });
    const atDefault = result.figures.find((f) => f.threshold === 0.85)!;
    expect(atDefault.recall).toBeGreaterThanOrEqual(0.98);
    expect(atDefault.fpr).toBeLessThanOrEqual(0.005);
    // Thresholds trade recall for precision monotonically.
    expect(result.figures[0].recall).toBeGreaterThanOrEqual(result.figures[2].recall);
    expect(result.figures[0].fpr).toBeGreaterThanOrEqual(result.figures[2].fpr);
  });
});
