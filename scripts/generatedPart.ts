/**
 * A docs page whose part between two marks is generated from the code (the settings' schema, the error catalogue):
 * the `npm run docs:*` scripts write it, and a test fails when the committed page differs from what they would write.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export interface GeneratedPart {
  /** The page, relative to the repository. */
  file: string;
  begin: string;
  end: string;
  /** What the marks are called in the error for a page without them. */
  name: string;
  content: () => string;
}

/** `page` with its generated part replaced by what the code says now. */
export function withGeneratedPart(page: string, part: GeneratedPart): string {
  const begin = page.indexOf(part.begin);
  const end = page.indexOf(part.end);
  if (begin < 0 || end < begin) throw new Error(`${part.file} has no ${part.name} marks`);
  return `${page.slice(0, begin + part.begin.length)}\n\n${part.content()}\n\n${page.slice(end)}`;
}

/** Writes the part into its page (the script's own run). */
export function writeGeneratedPart(part: GeneratedPart): void {
  writeFileSync(part.file, withGeneratedPart(readFileSync(part.file, 'utf8'), part));
  console.log(`${part.file} written`);
}
