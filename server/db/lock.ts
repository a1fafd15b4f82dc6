// An exclusive lock on an embedded data directory. PGlite is a single-process database: two processes
// opening the same files (e.g. the admin CLI while `npm start` is running) would corrupt them, so the second
// one is refused with a message saying which process holds the directory.
import fs from 'node:fs';
import path from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`The data directory ${dir} is in use by process ${pid} (a running kya server?). Stop it first, or use DATABASE_URL.`);
    this.name = 'DataDirInUseError';
  }
}

/** Whether a process with this pid exists (possibly another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes `DIR/kya.lock` (our pid) or throws DataDirInUseError. A lock left by a dead process is taken over.
 * The same process may open the directory again (tests reopen it after closing). Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  const file = path.join(dir, 'kya.lock');
  const mine = String(process.pid);
  const release = () => {
    try {
      if (fs.readFileSync(file, 'utf8') === mine) fs.unlinkSync(file);
    } catch {
      /* already gone */
    }
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: 'wx' });
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
    if (holder === process.pid) return release;
    if (Number.isInteger(holder) && holder > 0 && processAlive(holder)) throw new DataDirInUseError(dir, holder);
    fs.rmSync(file, { force: true }); // stale: its process is gone
  }
  throw new Error(`Could not lock the data directory ${dir}`);
}
