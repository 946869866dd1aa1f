/**
 * The console in a real browser (Debian's chromium through playwright-core): launching it, and a page signed in with
 * a credential that records the page's own errors. When the sign-in form does not come, the error says what the page
 * met (its errors, failed and refused requests, its text), not only that a locator timed out.
 */
import { chromium, type Browser, type Page } from 'playwright-core';

/** The flags every browser test starts chromium with; `extra` adds to them. */
export const launchChromium = (extra: string[] = []): Promise<Browser> =>
  chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extra,
    ],
  });

/** A page that keeps its uncaught errors and console errors in `problems` (a test expects it empty at its end). */
export type Watched = Page & { problems: string[] };

/** A new context's page on `${baseUrl}/console`, signed in with `credential` (an API key or the admin token). */
export async function signedIn(browser: Browser, baseUrl: string, credential: string, viewport = { width: 1440, height: 900 }): Promise<Watched> {
  const context = await browser.newContext({ viewport });
  const page = (await context.newPage()) as Watched;
  page.problems = [];
  const requests: string[] = [];
  page.on('pageerror', (err) => page.problems.push(err.message));
  page.on('console', (m) => m.type() === 'error' && page.problems.push(m.text()));
  page.on('requestfailed', (r) => requests.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText ?? 'failed'}`));
  page.on('response', (r) => r.status() >= 400 && requests.push(`${r.request().method()} ${r.url()}: ${r.status()}`));
  await page.goto(`${baseUrl}/console`);
  try {
    await page.getByLabel('API key or admin token').fill(credential);
  } catch (err) {
    const text = await page
      .locator('body')
      .innerText({ timeout: 1000 })
      .catch(() => '(no body)');
    throw new Error(
      `the sign-in form did not come (${(err as Error).message.split('\n')[0]}); page errors: ${JSON.stringify(page.problems)}; requests failed or refused: ${JSON.stringify(requests)}; page text: ${JSON.stringify(text.slice(0, 500))}`,
    );
  }
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return page;
}
