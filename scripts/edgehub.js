#!/usr/bin/env node
// `npx edgehub ...`: the recipient's command line. The TypeScript runs through tsx (a dependency), loaded here.
import { tsImport } from 'tsx/esm/api';

const { main } = await tsImport('./cli/edgehub.ts', import.meta.url);
process.exitCode = await main(process.argv.slice(2));
