/**
 * The README walk-through as a script: the ```sh blocks between `<!-- walkthrough:start -->` and
 * `<!-- walkthrough:end -->`, run top to bottom in one `bash -euo pipefail` (variables carry from block to block,
 * as when a person pastes them into one shell). A block right after `<!-- walkthrough:requires X -->` runs only
 * when X is among the features the caller says are present.
 */
import { spawn } from 'node:child_process';

export interface WalkthroughBlock {
  /** 1-based line of the block's opening fence in the markdown. */
  line: number;
  code: string;
  requires: string[];
}

export function walkthroughBlocks(markdown: string): WalkthroughBlock[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === '<!-- walkthrough:start -->');
  const end = lines.findIndex((l, i) => i > start && l.trim() === '<!-- walkthrough:end -->');
  if (start < 0 || end < 0) throw new Error('the markdown has no <!-- walkthrough:start --> ... <!-- walkthrough:end --> section');
  const blocks: WalkthroughBlock[] = [];
  let requires: string[] = [];
  for (let i = start + 1; i < end; i++) {
    const text = lines[i].trim();
    const marker = /^<!--\s*walkthrough:requires\s+(.+?)\s*-->$/.exec(text);
    if (marker) {
      requires = marker[1].split(/[\s,]+/);
      continue;
    }
    const fence = /^(`{3,})\s*(\S*)/.exec(text);
    if (!fence) continue;
    const close = lines.findIndex((l, j) => j > i && l.trim() === fence[1]);
    if (close < 0 || close > end) throw new Error(`the code block at line ${i + 1} is not closed inside the walk-through`);
    if (fence[2] === 'sh') blocks.push({ line: i + 1, code: lines.slice(i + 1, close).join('\n'), requires });
    requires = [];
    i = close;
  }
  return blocks;
}

export interface WalkthroughRun {
  code: number | null;
  output: string;
  /** Blocks left out because a required feature was absent. */
  skipped: WalkthroughBlock[];
  /** The README line of the block that was running when the script stopped (undefined when it succeeded). */
  failedAt?: number;
}

/**
 * Runs the blocks with exactly `env` (plus PATH and HOME): the script must not depend on anything else the test
 * process has. The script runs in its own process group, which is killed when bash exits, so a background process
 * a failed run left behind (the walk-through's backend) neither outlives it nor holds the run open through the
 * output pipes it inherited.
 */
export async function runWalkthrough(
  blocks: WalkthroughBlock[],
  options: { env: Record<string, string>; features?: string[]; cwd?: string; timeoutMs?: number; file?: string },
): Promise<WalkthroughRun> {
  const features = new Set(options.features ?? []);
  const skipped = blocks.filter((b) => b.requires.some((r) => !features.has(r)));
  const script = blocks
    .filter((b) => !skipped.includes(b))
    .map((b) => `echo '### ${options.file ?? 'README.md'} line ${b.line}' >&2\n${b.code}\n`)
    .join('\n');
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => {
    output += `\n(walk-through killed after ${options.timeoutMs} ms)\n`;
    killGroup(child.pid, 'SIGKILL');
  }, options.timeoutMs ?? 300_000);
  // The script's end is bash's exit, not the end of its output: a background process it started (the backend of
  // a run that failed before its `kill`) inherited stdout/stderr and would keep them open until it dies.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c, signal) => resolve(signal ? null : c)));
  clearTimeout(timer);
  killGroup(child.pid, 'SIGTERM');
  // what the group still writes while it goes; then stop reading, whatever still holds the pipes
  const grace = setTimeout(() => {
    killGroup(child.pid, 'SIGKILL');
    child.stdout.destroy();
    child.stderr.destroy();
  }, 2000);
  await closed;
  clearTimeout(grace);
  const markers = [...output.matchAll(/^### \S+ line (\d+)$/gm)];
  return { code, output, skipped, failedAt: code === 0 ? undefined : Number(markers.at(-1)?.[1]) || undefined };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals) {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}
