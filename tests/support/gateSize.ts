// Prints the gate package's budgets: packed tarball size, installed size with production dependencies, and
// the line count of each framework adapter.  npm run gate:size
import fs from 'node:fs';
import { BUDGET, adapterLines, buildGate, installedSize, packGate, tempProject } from './gatePackage';

buildGate();
const dir = tempProject('gate-pack');
try {
  const pack = packGate(dir);
  const installed = installedSize(pack.tarball);
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;
  console.log(`tarball:   ${kb(pack.bytes)} (budget ${kb(BUDGET.tarballBytes)}), ${pack.files.length} files`);
  console.log(
    `installed: ${mb(installed.bytes)} (budget ${mb(BUDGET.installedBytes)}), ${installed.packages.length} packages: ${installed.packages.join(', ')}`,
  );
  for (const [file, lines] of Object.entries(adapterLines())) console.log(`adapter ${file.padEnd(11)} ${lines} lines`);
  if (pack.bytes > BUDGET.tarballBytes || installed.bytes > BUDGET.installedBytes) process.exitCode = 1;
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
