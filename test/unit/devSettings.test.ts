import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEV_WARM_SPARES, devSettings } from '../../cli/embedded.js';
import { loadSettings } from '../../settings/index.js';

const cases: { env: Record<string, string>; warmSpares: number; why: string }[] = [
  { env: {}, warmSpares: DEV_WARM_SPARES, why: 'unset: dev keeps one spare' },
  { env: { DMCP_WARM_SPARES: '' }, warmSpares: DEV_WARM_SPARES, why: 'empty counts as unset' },
  { env: { DMCP_WARM_SPARES: '  ' }, warmSpares: DEV_WARM_SPARES, why: 'blank counts as unset' },
  { env: { DMCP_WARM_SPARES: '0' }, warmSpares: 0, why: 'an explicit 0 turns spares off' },
  { env: { DMCP_WARM_SPARES: '3' }, warmSpares: 3, why: 'an explicit value wins' },
];

for (const c of cases) {
  test(`dev's warm spares: ${c.why}`, () => {
    const settings = loadSettings(c.env);
    const dev = devSettings(settings);
    assert.equal(dev.warmSpares, c.warmSpares);
    assert.deepEqual({ ...dev, warmSpares: settings.warmSpares }, settings, 'nothing else changes');
  });
}

test('worker and run keep the settings default of no spares', () => {
  assert.equal(DEV_WARM_SPARES, 1);
  assert.equal(loadSettings({}).warmSpares, 0);
});
