import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Every .ts file the functions are built from. */
async function sources(): Promise<string[]> {
  const files = await readdir(path.join(root, 'lib'), { recursive: true });
  return [
    ...files.filter((file) => file.endsWith('.ts')).map((file) => path.join(root, 'lib', file)),
    ...(await readdir(path.join(root, 'functions'))).map((file) => path.join(root, 'functions', file)),
  ];
}

describe('schemas', () => {
  // docs/contract.md "Shape": every cold start is paid by a real user.
  it("import zod only as 'zod/mini' (classic zod adds about 450 KB to every bundle)", async () => {
    const imports: string[] = [];
    for (const file of await sources()) {
      for (const match of (await readFile(file, 'utf8')).matchAll(/from '(zod[^']*)'/g))
        imports.push(match[1]!);
    }

    expect(imports.length).toBeGreaterThan(0);
    expect(new Set(imports)).toEqual(new Set(['zod/mini']));
  });
});
