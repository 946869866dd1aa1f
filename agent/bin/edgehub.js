#!/usr/bin/env node
// `edgehub ...`: the agent package's command line (enroll, agent enroll|run, share). Node's built-ins only.
import { main } from '../lib/cli.js';

process.exitCode = await main(process.argv.slice(2));
