/**
 * `npm run openapi`: writes the API description and what is built from it. With `--check`, writes
 * nothing and exits 1 naming every file that differs from what it would write (npm test runs that).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buildClientTypes } from './client-types.ts';
import { buildDocument } from './document.ts';
import { sampleEvent } from './events.ts';
import { buildReferencePage } from './reference.ts';
import { describedRoutes } from './routes.ts';

const root = path.resolve(import.meta.dirname, '..');

export async function generatedFiles(): Promise<Record<string, string>> {
  const document = buildDocument();
  return {
    'openapi/openapi.json': `${JSON.stringify(document, null, 2)}\n`,
    'openapi/reference.html': await buildReferencePage(document),
    'client/api.ts': await buildClientTypes(JSON.parse(JSON.stringify(document))),
    ...Object.fromEntries(
      describedRoutes().map((route) => {
        const parameter = /\{(\w+)\}/.exec(route.path)?.[1];
        return [
          `events/${route.operationId}.json`,
          `${JSON.stringify(sampleEvent(route, parameter), null, 2)}\n`,
        ];
      }),
    ),
  };
}

async function main(): Promise<void> {
  // The failures' examples go through the functions' error responses, which log.
  process.env.LOG_LEVEL = 'silent';
  const check = process.argv.includes('--check');
  const stale: string[] = [];
  for (const [file, content] of Object.entries(await generatedFiles())) {
    const target = path.join(root, file);
    await mkdir(path.dirname(target), { recursive: true });
    const current = await readFile(target, 'utf8').catch(() => undefined);
    if (current === content) continue;
    stale.push(file);
    if (!check) await writeFile(target, content);
  }
  if (check && stale.length > 0) {
    console.error(`Out of date (run npm run openapi): ${stale.join(', ')}`);
    process.exit(1);
  }
  if (!check) console.log(stale.length > 0 ? `Wrote ${stale.join(', ')}` : 'Up to date.');
}

if (import.meta.main) await main();
