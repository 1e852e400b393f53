import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerCapabilities } from '@modelcontextprotocol/client';
import { TASKS_EXTENSION, needsTasksExtension, offersModernTasks } from '../../mcp/taskRequests.js';

const offers: [title: string, capabilities: unknown, expected: boolean][] = [
  ['no capabilities', undefined, false],
  ['no extensions', { tools: {} }, false],
  ['another extension only', { extensions: { 'io.example/other': {} } }, false],
  ['the tasks extension', { extensions: { [TASKS_EXTENSION]: {} } }, true],
  ['the tasks extension with settings', { extensions: { [TASKS_EXTENSION]: { future: true } } }, true],
  ['a malformed value (null)', { extensions: { [TASKS_EXTENSION]: null } }, false],
  ['a malformed value (true)', { extensions: { [TASKS_EXTENSION]: true } }, false],
  ['a malformed value (an array)', { extensions: { [TASKS_EXTENSION]: [] } }, false],
  ['the 2025-era tasks capability is not the extension', { tasks: { requests: { tools: { call: {} } } } }, false],
];
for (const [title, capabilities, expected] of offers) {
  void test(`offersModernTasks: ${title}`, () =>
    assert.equal(offersModernTasks(capabilities as ServerCapabilities | undefined), expected));
}

const needs: [title: string, code: number, data: unknown, expected: boolean][] = [
  [
    '-32021 naming the tasks extension',
    -32021,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    true,
  ],
  [
    '-32021 naming another extension',
    -32021,
    { requiredCapabilities: { extensions: { 'io.example/other': {} } } },
    false,
  ],
  ['-32021 for sampling', -32021, { requiredCapabilities: { sampling: {} } }, false],
  ['-32021 without data', -32021, undefined, false],
  [
    'another code naming the extension',
    -32602,
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    false,
  ],
];
for (const [title, code, data, expected] of needs) {
  void test(`needsTasksExtension: ${title}`, () => assert.equal(needsTasksExtension(code, data), expected));
}
