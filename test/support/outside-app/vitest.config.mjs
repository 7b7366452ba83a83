// The outside project's test runner: the platform as a global setup (platform.setup.mjs), as README.md shows it.
import { defineConfig } from 'vitest/config';

export default defineConfig({ test: { globalSetup: ['./platform.setup.mjs'], testTimeout: 60_000, hookTimeout: 60_000 } });
