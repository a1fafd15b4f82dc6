// `npm run bench:screening`: name-screening precision, recall, false-positive rate, latency and memory against
// the whole bundled OFAC list, at three thresholds, beside a Soundex baseline in the manner of OFAC's own search.
// Options: --positives N --negatives N --seed N --verbose --no-baseline.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { runScreeningBench } from './screeningSet';

const { values } = parseArgs({
  options: {
    positives: { type: 'string', default: '2700' },
    negatives: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '7' },
    verbose: { type: 'boolean', default: false },
    'no-baseline': { type: 'boolean', default: false },
  },
});

const thresholds = [0.8, 0.85, 0.9];
const result = runScreeningBench({
  positives: Number(values.positives),
  negatives: Number(values.negatives),
  seed: Number(values.seed),
  thresholds,
  baseline: !values['no-baseline'],
});
const pct = (x: number) => `${(x * 100).toFixed(2)} %`;
process.stdout.write(
  `name screening against the bundled OFAC list: ${result.list_entries} entries, ${result.list_names} indexed names (loaded in ${result.load_ms} ms)\n` +
    `labelled set: ${result.positives} positives (listed individuals in variants), ${result.negatives} negatives (unlisted people)\n` +
    `latency per screen (wall): p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, max ${result.max_ms} ms` +
    ` (shared CPU; wall time includes waiting for a core)\n` +
    `CPU time per screen: p50 ${result.cpu_p50_ms} ms, p99 ${result.cpu_p99_ms} ms; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores\n` +
    `memory: ${result.rss_lists_mb} MB resident for the loaded list and index (process total ${result.rss_total_mb} MB)\n\n` +
    `threshold  precision  recall    same entry  FPR      FPR name only  (TP / FN / FP / TN)\n`,
);
for (const f of result.figures) {
  process.stdout.write(
    `${f.threshold.toFixed(2)}${f.threshold === 0.85 ? '*' : ' '}      ${pct(f.precision).padEnd(9)}  ${pct(f.recall).padEnd(8)}  ${pct(f.recall_same_entry).padEnd(10)}  ${pct(f.fpr).padEnd(7)}  ${pct(f.fpr_name_only).padEnd(13)}  (${f.tp} / ${f.fn} / ${f.fp} / ${f.tn})\n`,
  );
}
process.stdout.write(
  `* default (SANCTIONS_MATCH_THRESHOLD)\n` +
    `recall: positives flagged at all; same entry: flagged as the very listed person the variant came from.\n` +
    `FPR: unlisted people screened with a DOB and country, as verification screens them; name only: without them.\n\n` +
    `recall by variant at 0.85: ${JSON.stringify(result.figures[1].recall_by_variant)}\n`,
);
if (result.baseline) {
  process.stdout.write(
    `\nbaseline on the same set (OFAC's published approach: Jaro-Winkler per name part in order, Soundex agreement counts as a match, same qualifier penalty):\n` +
      `threshold  precision  recall    same entry  FPR\n`,
  );
  for (const f of result.baseline) {
    process.stdout.write(
      `${f.threshold.toFixed(2)}       ${pct(f.precision).padEnd(9)}  ${pct(f.recall).padEnd(8)}  ${pct(f.recall_same_entry).padEnd(10)}  ${pct(f.fpr)}\n`,
    );
  }
}
if (values.verbose) {
  process.stdout.write(`\nmissed positives:\n${result.misses.map((m) => `  ${m.variant}: ${m.name} → ${m.best} (${m.score})`).join('\n')}\n`);
  process.stdout.write(`\nfalse positives:\n${result.false_positives.map((m) => `  ${m.name} → ${m.best} (${m.score})`).join('\n')}\n`);
}
