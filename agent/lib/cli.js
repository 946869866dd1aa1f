/** `edgehub <command>`: the command line of the agent package (bin/edgehub.js runs it). */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { agentEnroll } from './agentEnroll.js';
import { enroll } from './enroll.js';
import { EnrollError } from './errors.js';
import { defaultAgentDir, readIdentity } from './identity.js';
import { drainTimeout, poolNumber, PRIORITY, WEIGHT } from './pool.js';
import { parseAllowPattern } from './protocol.js';
import { drainRunning, writePidFile } from './pidFile.js';
import { AgentRunner } from './run.js';
import { agentUnit, DEFAULT_UNIT_FILE, writeUnit } from './service.js';
import { share } from './share.js';
import { VERSION } from './version.js';

const USAGE = `usage:
  edgehub enroll <jwt> [--out <folder>] [--expect-host <host[:port]>] [--validate]
      Verifies a client-certificate enrollment JWT (signature against the service's published keys, iss, aud, exp,
      and the host of its enrollment url), makes a P-256 key and a CSR with the subject the JWT requires, enrolls,
      and writes <name>.crt (certificate and issuing chain) and <name>.key (mode 0600) to --out (default: here).
      --validate only asks whether the enrollment would be accepted and prints the violations.
  edgehub agent enroll <jwt> [--dir <folder>] [--expect-host <host[:port]>]
      Enrolls this machine as an agent of the environment the JWT names; writes its identity to --dir
      (default ~/.edgehub/agent; the key mode 0600).
  edgehub agent run [--dir <folder>] [--edge <host:port>]... [--allow <pattern>]... [--weight <1-100>]
                [--priority <0-9>] [--drain-timeout <seconds>]
      Dials every edge (the identity's, or each --edge, and every live edge they name) and carries its
      environment's shares to their targets. --allow limits the targets further: host:port, *.domain:port or
      CIDR:port (port may be *). --weight (default 1) is its share of new requests against the environment's
      other agents; --priority (default 0) puts it in a tier: edges use a higher number only when no agent of a
      lower one is usable. SIGTERM drains it: the edges send it nothing new, what is in flight finishes (at most
      --drain-timeout, default 30 s), then it exits 0; a second SIGTERM stops it at once. Ctrl-C stops it at once.
  edgehub agent drain [--dir <folder>]
      Drains the agent running with that identity folder (as SIGTERM does) and waits until it has stopped.
  edgehub agent install-service [--dir <folder>] [--user <name>] [--edge <host:port>]... [--allow <pattern>]...
                [--weight <1-100>] [--priority <0-9>] [--drain-timeout <seconds>] [--write [<file>]]
      Prints a systemd unit that runs edgehub agent run with these options as a service (as the user who owns the
      identity's key, or --user; restarted whenever it ends); --write writes it to <file> (default
      ${DEFAULT_UNIT_FILE}). Then: systemctl daemon-reload && systemctl enable --now edgehub-agent
  edgehub share <target> [--dir <folder>] [--name <name>] [--frontend <id>]... [--mtls] [--login <provider id>
                [--email <*@domain>]...] [--tcp] [--inspect] [--edge <host:port>]... [--allow <CIDR>]...
                [--rate <N/WINDOW>] [--basic-auth <USER:PASS>]...
      With EDGEHUB_URL (the service) and EDGEHUB_API_KEY (an API key of your hub): publishes <target>
      (http://localhost:3000, localhost:3000 or 3000; with --tcp tcp://host:port) through this machine as an
      agent, prints the public address, and deletes the share on Ctrl-C. --name reserves the share: the same
      address on every run, kept on Ctrl-C. --mtls admits only the hub's client certificates and prints a curl
      line with one; --login requires a login with that auth provider (--email narrows it to domains);
      --inspect records the exchanges. --allow admits clients from those networks only (203.0.113.0/24,
      2001:db8::/32); --rate limits each client address to N requests per WINDOW (100/1m, or an ISO 8601
      duration: 100/PT1M); --basic-auth asks for that user and password (not with --login).
  edgehub --version (-v)
      Prints the version of this agent.`;

/** @param {string} message @param {number} [code] */
const fail = (message, code = 1) => {
  process.stderr.write(`edgehub: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return code;
};
/** @param {string} line */
const out = (line) => void process.stdout.write(line + '\n');

/** Resolves on the first SIGINT or SIGTERM, with which. @returns {Promise<'SIGINT' | 'SIGTERM'>} */
const interrupted = () =>
  new Promise((resolve) => {
    const onInt = () => done('SIGINT');
    const onTerm = () => done('SIGTERM');
    /** @param {'SIGINT' | 'SIGTERM'} signal */
    const done = (signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(signal);
    };
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
  });

/** @param {string[]} argv */
function parse(argv) {
  // `--write` alone (last, or before another option) means the default unit file
  const args = argv.map((a, i) => (a === '--write' && (i === argv.length - 1 || argv[i + 1].startsWith('-')) ? `--write=${DEFAULT_UNIT_FILE}` : a));
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      out: { type: 'string', short: 'o' },
      'expect-host': { type: 'string' },
      validate: { type: 'boolean', default: false },
      dir: { type: 'string' },
      edge: { type: 'string', multiple: true },
      allow: { type: 'string', multiple: true },
      weight: { type: 'string' },
      priority: { type: 'string' },
      'drain-timeout': { type: 'string' },
      name: { type: 'string' },
      frontend: { type: 'string', multiple: true },
      mtls: { type: 'boolean', default: false },
      login: { type: 'string' },
      email: { type: 'string', multiple: true },
      tcp: { type: 'boolean', default: false },
      inspect: { type: 'boolean', default: false },
      rate: { type: 'string' },
      'basic-auth': { type: 'string', multiple: true },
      user: { type: 'string' },
      write: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
      version: { type: 'boolean', short: 'v', default: false },
    },
  });
}

/** @typedef {ReturnType<typeof parse>['values']} Values */

/** @param {Values} values */
const dirOf = (values) => path.resolve(values.dir ?? defaultAgentDir());

/**
 * Runs the command line; returns the exit code. Errors are one line on stderr.
 * @param {string[]} argv
 * @returns {Promise<number>}
 */
export async function main(argv) {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    return fail(`${/** @type {Error} */ (err).message} (edgehub --help shows the usage)`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(USAGE);
    return 0;
  }
  if (values.version) {
    out(`edgehub ${VERSION}`);
    return 0;
  }
  const [command, ...args] = positionals;
  try {
    if (command === 'enroll') return await certificateEnroll(args, values);
    if (command === 'agent') return await agent(args, values);
    if (command === 'share') {
      if (args.length !== 1) return fail(args.length ? `unexpected argument '${args[1]}'` : 'no target given (edgehub share http://localhost:3000)', 2);
      await share({
        target: args[0],
        dir: dirOf(values),
        name: values.name,
        frontends: values.frontend,
        mtls: values.mtls,
        login: values.login,
        emails: values.email,
        tcp: values.tcp,
        inspect: values.inspect,
        allow: values.allow,
        rate: values.rate,
        basicAuth: values['basic-auth'],
        edges: values.edge,
        env: process.env,
        log: out,
        until: interrupted().then(() => undefined),
      });
      return 0;
    }
    return fail(command ? `unknown command '${command}' (the commands are: enroll, agent, share)` : 'no command given (edgehub --help shows the usage)', 2);
  } catch (err) {
    if (err instanceof EnrollError) return fail(err.message);
    return fail(`unexpected error: ${/** @type {Error} */ (err)?.message ?? String(err)}`);
  }
}

/**
 * @param {string[]} args
 * @param {Values} values
 */
async function certificateEnroll(args, values) {
  const [jwt, ...rest] = args;
  if (!jwt) return fail('no JWT given (edgehub enroll <jwt>)', 2);
  if (rest.length) return fail(`unexpected argument '${rest[0]}'`, 2);
  const result = await enroll({ jwt, out: values.out, expectHost: values['expect-host'], validate: values.validate, log: out });
  if (result.kind === 'validated') {
    if (!result.violations.length) {
      out('valid: the enrollment would be accepted (nothing was issued, the JWT is not spent)');
      return 0;
    }
    for (const v of result.violations) out(`violation ${v.path} ${v.label}: ${v.message}`);
    return 1;
  }
  out(`wrote ${result.certificateFile} and ${result.keyFile}${result.fingerprint ? ` (sha256 fingerprint ${result.fingerprint})` : ''}`);
  if (result.caFile) out(`wrote ${result.caFile} (the CA of the edge's certificates: curl --cacert ${result.caFile} --cert ... --key ... https://...)`);
  return 0;
}

/**
 * @param {string[]} args
 * @param {Values} values
 */
async function agent(args, values) {
  const [sub, ...rest] = args;
  if (sub === 'enroll') {
    const [jwt, ...extra] = rest;
    if (!jwt) return fail('no JWT given (edgehub agent enroll <jwt>)', 2);
    if (extra.length) return fail(`unexpected argument '${extra[0]}'`, 2);
    const identity = await agentEnroll({ jwt, dir: dirOf(values), expectHost: values['expect-host'], log: out });
    out(`enrolled agent ${identity.id} of environment ${identity.envZId}; identity written to ${identity.dir} (edges: ${identity.edges.join(', ') || 'none'})`);
    return 0;
  }
  if (sub === 'run') {
    if (rest.length) return fail(`unexpected argument '${rest[0]}'`, 2);
    let allow, weight, priority, drainMs;
    try {
      allow = (values.allow ?? []).map(parseAllowPattern);
      weight = poolNumber('--weight', values.weight, WEIGHT);
      priority = poolNumber('--priority', values.priority, PRIORITY);
      drainMs = drainTimeout(values['drain-timeout']);
    } catch (err) {
      return fail(/** @type {Error} */ (err).message, 2);
    }
    const identity = readIdentity(dirOf(values));
    const runner = new AgentRunner({ identity, edges: values.edge, allow, log: out, dir: dirOf(values), weight, priority }).start();
    const removePidFile = writePidFile(dirOf(values));
    out(`agent ${identity.id} of environment ${identity.envZId} running (weight ${weight}, priority ${priority}; Ctrl-C stops it, SIGTERM drains it)`);
    try {
      const signal = await interrupted();
      if (signal === 'SIGTERM') {
        // a second SIGTERM while draining: at once
        process.once('SIGTERM', () => {
          out('second SIGTERM: stopping at once');
          removePidFile();
          process.exit(0);
        });
        out(`draining: the edges send this agent nothing new; waiting for what is in flight (at most ${Math.round(drainMs / 1000)} s)`);
        const finished = await runner.drain(drainMs);
        out(finished ? 'drained: everything in flight finished' : `drain timeout: streams still open after ${Math.round(drainMs / 1000)} s were closed`);
      } else await runner.stop();
    } finally {
      removePidFile();
    }
    out('agent stopped');
    return 0;
  }
  if (sub === 'drain') {
    if (rest.length) return fail(`unexpected argument '${rest[0]}'`, 2);
    const pid = await drainRunning(dirOf(values), out);
    out(`agent ${pid} drained and stopped`);
    return 0;
  }
  if (sub === 'install-service') {
    if (rest.length) return fail(`unexpected argument '${rest[0]}'`, 2);
    let pool;
    try {
      pool = {
        weight: values.weight === undefined ? undefined : poolNumber('--weight', values.weight, WEIGHT),
        priority: values.priority === undefined ? undefined : poolNumber('--priority', values.priority, PRIORITY),
        drainMs: values['drain-timeout'] === undefined ? undefined : drainTimeout(values['drain-timeout']),
      };
    } catch (err) {
      return fail(/** @type {Error} */ (err).message, 2);
    }
    const { unit, user } = agentUnit({ dir: dirOf(values), user: values.user, edges: values.edge, allow: values.allow, pool });
    if (!values.write) {
      process.stdout.write(unit);
      return 0;
    }
    writeUnit(values.write, unit);
    out(`wrote ${values.write} (runs as ${user}); now: systemctl daemon-reload && systemctl enable --now ${path.basename(values.write, '.service')}`);
    return 0;
  }
  return fail(
    sub
      ? `unknown agent command '${sub}' (enroll, run, drain or install-service)`
      : 'edgehub agent enroll <jwt> | edgehub agent run | edgehub agent drain | edgehub agent install-service',
    2,
  );
}
