// `screening …` admin commands: re-screen every KYC-verified operator against the current sanctions name list,
// and show which list is loaded.
import type { Command } from '../registry';

export const screeningCommands: Command[] = [
  {
    name: 'screening rescreen',
    usage: 'screening rescreen   (refreshes SANCTIONS_NAME_SOURCE and re-screens every verified operator now)',
    async run({ deps }) {
      return deps.services.screening.rescreenAll();
    },
  },
  {
    name: 'screening status',
    usage: 'screening status',
    async run({ deps }) {
      return { configured: deps.services.screening.configured, list: deps.services.screening.loadedList, freshness: deps.services.screening.status() };
    },
  },
];
