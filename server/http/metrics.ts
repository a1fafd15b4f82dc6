// Get-or-create for Prometheus metrics: createApp and the routers run once per app, and tests build several
// apps on one Deps (one registry), where registering a name twice throws.
import { Counter, type Registry } from 'prom-client';

/** The counter named `config.name` in `registry`, registering it on first use. */
export function counter<L extends string>(registry: Registry, config: { name: string; help: string; labelNames: L[] }): Counter<L> {
  return (registry.getSingleMetric(config.name) as Counter<L> | undefined) ?? new Counter({ ...config, registers: [registry] });
}
