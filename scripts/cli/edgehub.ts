/** `edgehub <command>`: the recipient's command line (scripts/edgehub.js loads this through tsx). */
import { parseArgs } from 'node:util';
import { enroll, EnrollError } from './enroll.js';

const USAGE = `usage: edgehub enroll <jwt> [--out <folder>] [--expect-host <host[:port]>] [--validate]

  Verifies the enrollment JWT (signature against the service's published keys, iss, aud, exp, and the host of its
  enrollment url), makes a P-256 key and a CSR with the subject the JWT requires, enrolls, and writes <name>.crt
  (certificate and issuing chain) and <name>.key (mode 0600) to --out (default: the current folder).
  --validate only asks whether the enrollment would be accepted and prints the violations.`;

/** Runs the command line; returns the exit code. Errors are one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  const fail = (message: string, code = 1) => {
    process.stderr.write(`edgehub: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
    return code;
  };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    return fail(`${(err as Error).message} (edgehub --help shows the usage)`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const [command, jwt, ...rest] = positionals;
  if (command !== 'enroll') return fail(command ? `unknown command '${command}' (the command is: enroll)` : 'no command given (edgehub enroll <jwt>)', 2);
  if (!jwt) return fail('no JWT given (edgehub enroll <jwt>)', 2);
  if (rest.length) return fail(`unexpected argument '${rest[0]}'`, 2);
  try {
    const result = await enroll({
      jwt,
      out: values.out,
      expectHost: values['expect-host'],
      validate: values.validate,
      log: (line) => process.stdout.write(line + '\n'),
    });
    if (result.kind === 'validated') {
      if (!result.violations.length) {
        process.stdout.write('valid: the enrollment would be accepted (nothing was issued, the JWT is not spent)\n');
        return 0;
      }
      for (const v of result.violations) process.stdout.write(`violation ${v.path} ${v.label}: ${v.message}\n`);
      return 1;
    }
    process.stdout.write(`wrote ${result.certificateFile} and ${result.keyFile}${result.fingerprint ? ` (sha256 fingerprint ${result.fingerprint})` : ''}\n`);
    return 0;
  } catch (err) {
    if (err instanceof EnrollError) return fail(err.message);
    return fail(`unexpected error: ${(err as Error)?.message ?? String(err)}`);
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      out: { type: 'string', short: 'o' },
      'expect-host': { type: 'string' },
      validate: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}
