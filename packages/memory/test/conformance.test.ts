import { describeStoreConformance } from '@postpone/conformance';
import { makeMemoryHarness } from './memory-harness.js';

describeStoreConformance('memory', () => makeMemoryHarness());
