import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import * as errors from '../../lib/envelope/errors.ts';
import { FORM_MEDIA_TYPE } from '../../lib/http/form-route.ts';
import type { RouteOptions } from '../../lib/http/route.ts';
import { FAILURE_CODES } from '../../openapi/failures.ts';
import { describedRoutes, ROUTE_TABLE } from '../../openapi/routes.ts';
import { Contract, DOCUMENT_PATH } from '../helpers/contract.ts';
import { handlerOf, useTestGateway } from '../helpers/gateway.ts';
import { withoutNetwork } from '../helpers/no-network.ts';
import type { RouteName } from '../helpers/routes.ts';

const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

useTestGateway();

const committed = async () => JSON.parse(await readFile(DOCUMENT_PATH, 'utf8'));

type Operation = { operationId: string; responses: Record<string, any>; requestBody?: any };
const operationsOf = (document: any): Array<{ method: string; path: string; operation: Operation }> =>
  Object.entries(document.paths).flatMap(([pathname, item]) =>
    Object.entries(item as Record<string, Operation>).map(([method, operation]) => ({
      method,
      path: pathname,
      operation,
    })),
  );

describe('openapi/openapi.json', () => {
  it('is what npm run openapi generates (never edited by hand)', async () => {
    const checked = await run(process.execPath, ['openapi/generate.ts', '--check'], { cwd: root }).then(
      () => 'up to date',
      (error: { stderr: string }) => error.stderr,
    );

    expect(checked).toBe('up to date');
  }, 60_000);

  it('describes exactly the routes of serverless.yml, each under its function name', async () => {
    const config = parseYaml(await readFile(path.join(root, 'serverless.yml'), 'utf8'), {
      logLevel: 'error',
    }) as { functions: Record<string, { events: Array<{ http?: { method: string; path: string } }> }> };
    const declared = Object.entries(config.functions).flatMap(([name, fn]) =>
      fn.events.flatMap((event) =>
        event.http ? [`${name} ${event.http.method.toLowerCase()} /${event.http.path}`] : [],
      ),
    );

    const documented = operationsOf(await committed()).map(
      ({ method, path: pathname, operation }) => `${operation.operationId} ${method} ${pathname}`,
    );

    expect(documented.sort()).toEqual(declared.sort());
  });

  it('is valid OpenAPI 3.1, checked offline', async () => {
    const document = await committed();

    const { result, attempts } = await withoutNetwork(() => new Validator().validate(document));

    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(attempts).toEqual([]);
  });

  it("passes Redocly's recommended rules, offline, with no warning", async () => {
    const source = await readFile(DOCUMENT_PATH, 'utf8');

    const { result: problems, attempts } = await withoutNetwork(async () => {
      // The API is private: there is no license to name.
      const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off' } });
      return lintFromString({ source, absoluteRef: DOCUMENT_PATH, config });
    });

    expect(
      problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    ).toEqual([]);
    expect(attempts).toEqual([]);
  }, 30_000);

  it('has schemas that compile as JSON Schema 2020-12, and examples that match them', async () => {
    const document = await committed();
    const contract = new Contract(document);
    const mismatches: string[] = [];

    for (const { operation } of operationsOf(document)) {
      const body = operation.requestBody?.content['application/json'];
      const checks = [
        ...(body ? [[`${operation.operationId} request`, body] as const] : []),
        ...Object.entries(operation.responses).map(
          ([status, response]) =>
            [`${operation.operationId} ${status}`, response.content['application/json']] as const,
        ),
      ];
      for (const [name, media] of checks) {
        const validate = contract.validator(`example check ${name}`, media.schema);
        for (const [example, { value }] of Object.entries(media.examples ?? {}) as [
          string,
          { value: unknown },
        ][]) {
          if (!validate(value))
            mismatches.push(`${name} example ${example}: ${JSON.stringify(validate.errors)}`);
        }
      }
    }

    expect(mismatches).toEqual([]);
  });
});

describe('the route table (openapi/routes.ts)', () => {
  it.each(describedRoutes().map((route) => [route.operationId, route] as const))(
    '%s says what its function requires: scope, schemas, Idempotency-Key, On-Behalf-Of, media type',
    async (name, route) => {
      const handler = (await handlerOf(name as RouteName)) as unknown as {
        route: Partial<RouteOptions<unknown, unknown>> & { form?: true };
      };

      expect(handler.route.scope).toBe(route.scope);
      expect(handler.route.body).toBe(route.body);
      expect(handler.route.path).toBe(route.pathParameters);
      expect(handler.route.query).toBe(route.queryParameters);
      expect(handler.route.idempotency !== undefined).toBe(route.idempotent !== undefined);
      expect(handler.route.idempotency?.optional === true).toBe(route.idempotent === 'optional');
      expect(handler.route.createsOrders === true).toBe(route.createsOrders === true);
      expect(handler.route.form === true).toBe(route.mediaType === FORM_MEDIA_TYPE);
    },
  );

  it('states the body rules that are checks across fields, which JSON Schema cannot carry', () => {
    for (const route of describedRoutes()) {
      const checks = ((route.body as any)?._zod.def.checks ?? []) as unknown[];
      expect(checks.length > 0, `${route.operationId}: bodyRules`).toBe(route.bodyRules !== undefined);
    }
  });

  it("describes every failure code the service's errors carry, and no other", () => {
    const codes = Object.values(errors).flatMap((value) =>
      typeof value === 'function' && value.prototype instanceof errors.ApiError
        ? [new (value as unknown as new (...args: unknown[]) => errors.ApiError)([]).code]
        : [],
    );

    expect([...new Set(codes)].sort()).toEqual([...FAILURE_CODES].sort());
  });

  it('names its routes as tests/helpers/routes.ts does', async () => {
    const { API_FUNCTIONS } = await import('../helpers/routes.ts');

    expect(Object.keys(ROUTE_TABLE).sort()).toEqual([...API_FUNCTIONS].sort());
  });
});
