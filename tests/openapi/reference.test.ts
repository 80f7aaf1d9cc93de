import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * openapi/reference.html in a real headless Chromium (Debian's `chromium`; no browser download):
 * every operation is on the page, nothing is requested beyond the file itself, and nothing is
 * logged as an error. The screenshot stays in test-output/ (git-ignored) for a person to look at.
 * CI (CI=true) installs Chromium (.ci/run) and fails without it; elsewhere the check is skipped
 * with one line saying so.
 */
const root = path.resolve(import.meta.dirname, '../..');
const page = path.join(root, 'openapi', 'reference.html');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(chromiumPath);
const underCi = process.env.CI === 'true';

if (!hasChromium && !underCi) {
  console.log(`Reference page check skipped: no Chromium at ${chromiumPath} (apt-get install chromium).`);
}

/** Only the page itself and what it makes in memory may load. */
const LOCAL = /^(file|data|blob|about):/;

describe.skipIf(!hasChromium && !underCi)('the reference page in Chromium', () => {
  let context: BrowserContext;
  let profile: string;
  let tab: Page;
  const requests: string[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    profile = await mkdtemp(path.join(tmpdir(), 'payhere-chromium-'));
    // A fresh profile (--user-data-dir) per run.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 900 },
    });
    // Anything but the file and in-memory URLs is refused before it leaves, and remembered.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (LOCAL.test(url)) return route.continue();
      requests.push(url);
      return route.abort();
    });
    tab = context.pages()[0] ?? (await context.newPage());
    tab.on('request', (request) => {
      if (!LOCAL.test(request.url()) && !requests.includes(request.url())) requests.push(request.url());
    });
    tab.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    tab.on('pageerror', (error) => errors.push(error.message));
    await tab.goto(pathToFileURL(page).href);
    await tab.waitForSelector('[data-section-id^="operation/"]', { timeout: 30_000 });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('shows every operation of the document', async () => {
    const document = JSON.parse(await readFile(path.join(root, 'openapi', 'openapi.json'), 'utf8'));
    const operations = Object.values(document.paths).flatMap((item) =>
      Object.values(item as Record<string, { operationId: string; summary: string }>),
    );

    for (const { operationId, summary } of operations) {
      const section = tab.locator(`[data-section-id="operation/${operationId}"]`);
      await expect(section.count(), operationId).resolves.toBe(1);
      await expect(section.locator('h2').first().innerText()).resolves.toBe(summary);
    }
  });

  it('requests nothing beyond the file, and logs no error', async () => {
    const output = await outputDir();
    await tab.screenshot({ path: path.join(output, 'reference.png') });
    await tab.locator('[data-section-id="operation/charge"]').scrollIntoViewIfNeeded();
    await tab.screenshot({ path: path.join(output, 'reference-charge.png') });

    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
  });
});

async function outputDir(): Promise<string> {
  const dir = path.join(root, 'test-output');
  await mkdir(dir, { recursive: true });
  return dir;
}
