import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * lib/ is what the functions are built from: it never reaches back up into functions/ (docs/maintainer.md
 * "Layout"; `npm run lint` refuses import cycles). Read from the sources, so a type-only import
 * counts too: tsc and esbuild erase it, but it still ties lib/ to a handler.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const LIB = path.join(ROOT, 'lib');
const FUNCTIONS = path.join(ROOT, 'functions');

/** What a source imports from: `from '…'` (imports, type imports, re-exports), `import '…'`, `import('…')`. */
const SPECIFIER = /\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g;

/** The file a specifier names in this repository (relative, or through package.json's `imports`), or none (a package). */
function resolve(specifier: string, importer: string, imports: Record<string, string>): string | undefined {
  if (specifier.startsWith('.')) return path.resolve(path.dirname(importer), specifier);
  for (const [pattern, target] of Object.entries(imports)) {
    const [prefix = '', suffix = ''] = pattern.split('*');
    if (pattern === specifier) return path.resolve(ROOT, target);
    if (pattern.includes('*') && specifier.startsWith(prefix) && specifier.endsWith(suffix)) {
      const middle = specifier.slice(prefix.length, specifier.length - suffix.length);
      return path.resolve(ROOT, target.replace('*', middle));
    }
  }
  return undefined;
}

describe('lib/', () => {
  it('never imports from functions/', async () => {
    // Prepare
    const { imports } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
      imports: Record<string, string>;
    };
    const sources = (await readdir(LIB, { recursive: true }))
      .filter((file) => /\.[cm]?[jt]s$/.test(file))
      .map((file) => path.join(LIB, file));

    // Act
    const withinRepository: string[] = [];
    const intoFunctions: string[] = [];
    for (const source of sources) {
      const text = await readFile(source, 'utf8');
      for (const [, specifier] of text.matchAll(SPECIFIER)) {
        const target = resolve(specifier!, source, imports);
        if (target === undefined) continue;
        withinRepository.push(target);
        if (!path.relative(FUNCTIONS, target).startsWith('..')) {
          intoFunctions.push(`${path.relative(ROOT, source)} imports ${specifier}`);
        }
      }
    }

    // Assess: the scan read lib/'s own imports (else it could pass by seeing nothing), none upward.
    expect(
      withinRepository.filter((target) => target.startsWith(`${LIB}${path.sep}`)).length,
    ).toBeGreaterThan(sources.length);
    expect(intoFunctions).toEqual([]);
  });
});
