import { createHash } from 'node:crypto';
import type { LayerKind } from '../contract/index.js';
import { isTrustedLayer, layerLabel, type RefusedEntry, type ServerEntry } from './types.js';

/** `value` with every object's keys in sorted order, so equal entries hash equal whatever their key order. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * Content hash of resolved entries: the same entries give the same hash whatever the key
 * order in the files or the line they sit on (`source` is left out). Every other field counts,
 * `retry`, `protocol` and `tasks` included; `"auto"` in any of them is hashed as leaving it out, since it is the
 * default (so an existing session does not restart when a file spells the default out).
 */
export function hashEntries(entries: ServerEntry[]): string {
  const body = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(({ source: _s, retry, protocol, tasks, ...rest }) =>
      canonical({
        ...rest,
        ...(retry === undefined || retry === 'auto' ? {} : { retry }),
        ...(protocol === undefined || protocol === 'auto' ? {} : { protocol }),
        ...(tasks === undefined || tasks === 'auto' ? {} : { tasks }),
      }),
    );
  return createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
}

/** One layer's entries, ready to merge. */
export interface LayerEntries {
  kind: LayerKind;
  servers: ServerEntry[];
  refused: RefusedEntry[];
}

type Slot = { trusted: boolean; source: string; kind: LayerKind } & (
  | { server: ServerEntry }
  | { refused: RefusedEntry }
);

/**
 * Merges layers in order. A later trusted layer replaces an entry of the same name whole;
 * an untrusted layer never replaces an existing entry (the existing one stays, with a warning). A
 * refused entry holds its name like a good one: fixing it is the owner's job, not a later layer's.
 */
export function mergeLayers(layers: LayerEntries[]): {
  servers: ServerEntry[];
  refused: RefusedEntry[];
  warnings: string[];
} {
  const slots = new Map<string, Slot>();
  const warnings: string[] = [];
  for (const layer of layers) {
    const trusted = isTrustedLayer(layer.kind);
    const items: Slot[] = [
      ...layer.servers.map((s) => ({ trusted, source: s.source, kind: layer.kind, server: s })),
      ...layer.refused.map((r) => ({ trusted, source: r.source, kind: layer.kind, refused: r })),
    ];
    for (const item of items) {
      const name = 'server' in item ? item.server.name : item.refused.name;
      const existing = slots.get(name);
      if (existing && !trusted) {
        const why = existing.trusted
          ? 'an untrusted layer cannot replace a server from a trusted layer'
          : 'a server of that name came first';
        warnings.push(
          `${item.source}: server "${name}" from the ${layerLabel(layer.kind)} layer is ignored: ` +
            `${why} (${existing.source}, ${layerLabel(existing.kind)} layer)`,
        );
        continue;
      }
      // Map.set keeps the original position, so replacing an entry does not reorder the status.
      slots.set(name, item);
    }
  }
  const servers: ServerEntry[] = [];
  const refused: RefusedEntry[] = [];
  for (const slot of slots.values()) {
    if ('server' in slot) servers.push(slot.server);
    else refused.push(slot.refused);
  }
  return { servers, refused, warnings };
}
