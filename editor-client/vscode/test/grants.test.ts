import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { grantCall, grantItems, type GrantItem, type GrantsUi, manageGrants } from "../src/grants";
import type { GrantInfo } from "../src/protocol";
import { FakeServer } from "./fake-server";

const allowed: GrantInfo = {
  grantId: "g1",
  toolName: "bash",
  arguments: JSON.stringify({ command: "npm ci", escalation: "network", justification: "install" }),
  title: "Run with network access: npm ci",
  decision: "allow",
  created: 1_700_000_000,
};
const rejected: GrantInfo = {
  grantId: "g2",
  toolName: "write_file",
  arguments: JSON.stringify({ content: "x", path: "src/a.ts" }),
  title: "Write file: src/a.ts",
  decision: "reject",
  created: 1_700_000_001,
};

/** A user at the quick pick: records what was offered, picks the items `choose` selects. */
function user(choose: (items: GrantItem[]) => GrantItem[] | undefined) {
  const shown: { items: GrantItem[]; title: string }[] = [];
  const infos: string[] = [];
  const errors: string[] = [];
  const ui: GrantsUi = {
    pick: async (items, title) => {
      shown.push({ items, title });
      return choose(items);
    },
    info: (m) => infos.push(m),
    error: (m) => errors.push(m),
  };
  return { ui, shown, infos, errors };
}

describe("Agent: Manage Permissions", () => {
  it("lists each grant's answer, tool and call", () => {
    const items = grantItems([allowed, rejected]);
    assert.deepEqual(
      items.map(({ label, description, detail }) => ({ label, description, detail })),
      [
        { label: "$(check) Run with network access: npm ci", description: "always allowed · bash", detail: "npm ci  (network)" },
        { label: "$(circle-slash) Write file: src/a.ts", description: "always rejected · write_file", detail: 'src/a.ts  {"content":"x"}' },
      ],
    );
    assert.equal(grantCall({ ...allowed, arguments: "not json" }), "not json");
  });

  it("revokes the picked grants of the chat's session", async () => {
    const server = new FakeServer([]);
    const { ui, shown, infos } = user((items) => items.filter((i) => i.grant.grantId === "g1"));
    const done = manageGrants(server, "s1", ui);
    const list = await server.next("agent/grants");
    assert.deepEqual(list.params, { sessionId: "s1" });
    list.resolve({ grants: [allowed, rejected] });
    const revoke = await server.next("agent/revokeGrant");
    assert.deepEqual(revoke.params, { sessionId: "s1", grantId: "g1" });
    revoke.resolve({ revoked: true });
    assert.deepEqual(await done, ["g1"]);
    assert.equal(shown[0]?.title, "Permissions of this conversation (2)");
    assert.equal(server.calls.length, 0); // nothing else was revoked
    assert.match(infos.at(-1) ?? "", /revoked 1 answer/);
  });

  it("revokes nothing when the pick is dismissed", async () => {
    const server = new FakeServer([]);
    const { ui } = user(() => undefined);
    const done = manageGrants(server, "s1", ui);
    (await server.next("agent/grants")).resolve({ grants: [allowed] });
    assert.deepEqual(await done, []);
    assert.equal(server.calls.length, 0);
  });

  it("says so when there are no grants, or no conversation", async () => {
    const server = new FakeServer([]);
    const { ui, shown, infos } = user((items) => items);
    const done = manageGrants(server, "s1", ui);
    (await server.next("agent/grants")).resolve({ grants: [] });
    assert.deepEqual(await done, []);
    assert.deepEqual(await manageGrants(server, undefined, ui), []);
    assert.equal(shown.length, 0);
    assert.deepEqual(infos, [
      "Agent: no “always” answers in this conversation.",
      "Agent: no conversation yet, so no permissions were granted.",
    ]);
  });

  it("reports a failed request as an error", async () => {
    const server = new FakeServer([]);
    const { ui, errors } = user((items) => items);
    const done = manageGrants(server, "gone", ui);
    (await server.next("agent/grants")).reject({ code: -32602, message: "unknown session" });
    assert.deepEqual(await done, []);
    assert.deepEqual(errors, ["Agent: could not list the permissions: unknown session"]);
  });
});
