import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import {
  diffSymbols,
  diffSymbolsOrFile,
  extractSymbols,
  languageForPath,
  normaliseSymbolText,
  preloadSymbolGrammars,
  type SymbolDef,
} from "../../src/overlay/symbols/index.js";

/** name:kind pairs, in document order. */
async function names(path: string, content: string): Promise<string[]> {
  const symbols = await extractSymbols(path, content);
  expect(symbols).not.toBeNull();
  return (symbols as SymbolDef[]).map((s) => `${s.name}:${s.kind}`);
}

async function byName(path: string, content: string): Promise<Map<string, SymbolDef>> {
  const symbols = await extractSymbols(path, content);
  expect(symbols).not.toBeNull();
  return new Map((symbols as SymbolDef[]).map((s) => [s.name, s]));
}

const TS = `import { randomUUID } from "node:crypto";

export interface Task {
  id: string;
  title: string;
}

export type TaskId = string;

export enum Status {
  Open,
  Done,
}

export class TaskService {
  private readonly tasks = new Map<TaskId, Task>();

  constructor(private readonly clock: () => number) {}

  create_task(title: string): Task {
    const task = { id: randomUUID(), title };
    this.tasks.set(task.id, task);
    return task;
  }

  find(id: TaskId): Task | undefined;
  find(id: TaskId, strict: true): Task;
  find(id: TaskId, strict = false): Task | undefined {
    const t = this.tasks.get(id);
    if (strict && !t) throw new Error("missing");
    return t;
  }

  get size(): number {
    return this.tasks.size;
  }

  private readonly onTick = (): void => {};
}

export const createTaskService = (): TaskService => new TaskService(Date.now);

export function parseId(raw: string): TaskId;
export function parseId(raw: unknown): TaskId {
  return String(raw);
}

export namespace Tasks {
  export function empty(): Task[] {
    return [];
  }
}

const DEFAULT_TITLE = "untitled";
`;

describe("languageForPath", () => {
  it("maps extensions to grammars and everything else to undefined", () => {
    expect(languageForPath("src/a.ts")).toBe("typescript");
    expect(languageForPath("a.mts")).toBe("typescript");
    expect(languageForPath("a.cts")).toBe("typescript");
    expect(languageForPath("a/b.d.ts")).toBe("typescript");
    expect(languageForPath("ui/App.tsx")).toBe("tsx");
    expect(languageForPath("a.js")).toBe("javascript");
    expect(languageForPath("a.mjs")).toBe("javascript");
    expect(languageForPath("a.cjs")).toBe("javascript");
    expect(languageForPath("a.jsx")).toBe("javascript");
    expect(languageForPath("pkg/mod.py")).toBe("python");
    expect(languageForPath("cmd/main.go")).toBe("go");
    expect(languageForPath("src/lib.rs")).toBe("rust");
    expect(languageForPath("A.java")).toBe("java");
    expect(languageForPath("A.PY")).toBe("python");
    expect(languageForPath("README.md")).toBeUndefined();
    expect(languageForPath("Makefile")).toBeUndefined();
    expect(languageForPath(".ts")).toBeUndefined();
    expect(languageForPath("dir.ts/file")).toBeUndefined();
  });
});

describe("extractSymbols", () => {
  it("preloads every grammar", async () => {
    expect(await preloadSymbolGrammars()).toEqual([]);
  });

  it("TypeScript: classes, methods, overloads, interfaces, types, enums, arrow consts, namespaces", async () => {
    expect(await names("src/tasks.ts", TS)).toEqual([
      "Task:interface",
      "TaskId:type",
      "Status:enum",
      "TaskService:class",
      "TaskService.constructor:method",
      "TaskService.create_task:method",
      "TaskService.find:method",
      "TaskService.size:method",
      "TaskService.onTick:method",
      "createTaskService:function",
      "parseId:function",
      "Tasks:module",
      "Tasks.empty:function",
      "DEFAULT_TITLE:const",
    ]);
    const s = await byName("src/tasks.ts", TS);
    // Lines are 1-based and inclusive; `export` belongs to the symbol.
    expect(s.get("Task")).toMatchObject({ startLine: 3, endLine: 6 });
    expect(s.get("TaskService")).toMatchObject({ startLine: 15, endLine: 39 });
    expect(s.get("TaskService.create_task")).toMatchObject({ startLine: 20, endLine: 24 });
    // Overload signatures are folded into the implementation.
    expect(s.get("TaskService.find")).toMatchObject({ startLine: 26, endLine: 32 });
    expect(s.get("parseId")).toMatchObject({ startLine: 43, endLine: 46 });
    expect(s.get("DEFAULT_TITLE")).toMatchObject({ startLine: 54, endLine: 54 });
    for (const sym of s.values()) expect(sym.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("TSX: components and JSX-returning arrow functions", async () => {
    const tsx = `import React from "react";

type Props = { title: string };

export function Header({ title }: Props) {
  return <h1 className="title">{title}</h1>;
}

export const Footer = (): JSX.Element => <footer>bye</footer>;

export default class App extends React.Component<Props> {
  render() {
    return (
      <div>
        <Header title={this.props.title} />
        <Footer />
      </div>
    );
  }
}
`;
    expect(await names("ui/App.tsx", tsx)).toEqual([
      "Props:type",
      "Header:function",
      "Footer:function",
      "App:class",
      "App.render:method",
    ]);
  });

  it("JavaScript: classes, getters/setters (de-duplicated), field arrows, generators, function expressions", async () => {
    const js = `"use strict";

class Queue {
  #items = [];

  get length() {
    return this.#items.length;
  }

  set length(n) {
    this.#items.length = n;
  }

  push = (item) => {
    this.#items.push(item);
  };

  *[Symbol.iterator]() {
    yield* this.#items;
  }
}

function* ids() {
  let i = 0;
  while (true) yield i++;
}

const make = function () {
  return new Queue();
};

let counter = 0;

export { Queue, ids, make };
`;
    expect(await names("lib/queue.mjs", js)).toEqual([
      "Queue:class",
      "Queue.length:method",
      "Queue.length#2:method",
      "Queue.push:method",
      "Queue.[Symbol.iterator]:method",
      "ids:function",
      "make:function",
      "counter:variable",
    ]);
  });

  it("Python: classes, methods, nested classes, decorators, async functions", async () => {
    const py = `import dataclasses


@dataclasses.dataclass
class Task:
    id: str
    title: str


class TaskService:
    """Keeps tasks in memory."""

    class Store:
        class Index:
            def lookup(self, key):
                return key

        def put(self, task):
            pass

    def __init__(self):
        self.store = TaskService.Store()

    @property
    def count(self):
        return 0

    async def create_task(self, title):
        def helper():
            return title
        return Task(id="1", title=helper())


def main():
    TaskService()
`;
    expect(await names("app/tasks.py", py)).toEqual([
      "Task:class",
      "TaskService:class",
      "TaskService.Store:class",
      "TaskService.Store.Index:class",
      "TaskService.Store.Index.lookup:method",
      "TaskService.Store.put:method",
      "TaskService.__init__:method",
      "TaskService.count:method",
      "TaskService.create_task:method",
      "main:function",
    ]);
    const s = await byName("app/tasks.py", py);
    // Decorators belong to the definition.
    expect(s.get("Task")).toMatchObject({ startLine: 4, endLine: 7 });
    expect(s.get("TaskService.count")).toMatchObject({ startLine: 24, endLine: 26 });
  });

  it("Go: functions, methods with (pointer/generic) receivers, types, consts, vars, duplicate init", async () => {
    const go = `package server

import (
	"context"
	"net/http"
)

const (
	DefaultPort = 8080
	DefaultHost = "localhost"
)

var ErrClosed = errors.New("closed")

type Server struct {
	addr string
	srv  *http.Server
}

type Handler interface {
	Handle(ctx context.Context) error
}

type Port = int

type Cache[K comparable, V any] struct {
	items map[K]V
}

func init() {
	register("a")
}

func init() {
	register("b")
}

func New(addr string) *Server {
	return &Server{addr: addr}
}

func (s *Server) Start(ctx context.Context) error {
	return s.srv.ListenAndServe()
}

func (s Server) Addr() string { return s.addr }

func (c *Cache[K, V]) Get(k K) (V, bool) {
	v, ok := c.items[k]
	return v, ok
}
`;
    expect(await names("server/server.go", go)).toEqual([
      "DefaultPort:const",
      "DefaultHost:const",
      "ErrClosed:variable",
      "Server:struct",
      "Handler:interface",
      "Port:type",
      "Cache:struct",
      "init:function",
      "init#2:function",
      "New:function",
      "Server.Start:method",
      "Server.Addr:method",
      "Cache.Get:method",
    ]);
  });

  it("Rust: fns, structs, enums, traits, impls (inherent and trait), mod nesting, attributes", async () => {
    const rs = `use std::fmt;

#[derive(Debug, Clone)]
pub struct Foo {
    pub name: String,
}

pub enum Shape {
    Circle(f64),
    Square(f64),
}

pub trait Describe {
    fn describe(&self) -> String;
    fn shout(&self) -> String {
        self.describe().to_uppercase()
    }
}

impl Foo {
    pub fn new(name: &str) -> Self {
        Foo { name: name.to_string() }
    }

    pub fn bar(&self) -> usize {
        self.name.len()
    }
}

impl fmt::Display for Foo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl Describe for Foo {
    fn describe(&self) -> String {
        self.name.clone()
    }
}

pub const LIMIT: usize = 10;

mod outer {
    pub fn f() {}

    pub mod inner {
        pub fn g() {}
    }
}

fn main() {
    println!("{}", Foo::new("x"));
}
`;
    expect(await names("src/lib.rs", rs)).toEqual([
      "Foo:struct",
      "Shape:enum",
      "Describe:trait",
      "Describe.describe:method",
      "Describe.shout:method",
      "impl Foo:impl",
      "Foo.new:method",
      "Foo.bar:method",
      "impl fmt::Display for Foo:impl",
      "Foo.fmt:method",
      "impl Describe for Foo:impl",
      "Foo.describe:method",
      "LIMIT:const",
      "outer:module",
      "outer.f:function",
      "outer.inner:module",
      "outer.inner.g:function",
      "main:function",
    ]);
    const s = await byName("src/lib.rs", rs);
    // The #[derive] attribute belongs to the struct.
    expect(s.get("Foo")).toMatchObject({ startLine: 3, endLine: 6 });
  });

  it("Java: classes, nested types, constructors, overloads", async () => {
    const java = `package app;

public class TaskService {
    private final Map<String, Task> tasks = new HashMap<>();

    public TaskService() {}

    public Task create(String title) { return null; }

    public Task create(String title, int prio) { return null; }

    static class Task {
        String title;
        String title() { return title; }
    }

    enum Status { OPEN, DONE; boolean closed() { return this == DONE; } }
}
`;
    expect(await names("src/app/TaskService.java", java)).toEqual([
      "TaskService:class",
      "TaskService.TaskService:method",
      "TaskService.create:method",
      "TaskService.create#2:method",
      "TaskService.Task:class",
      "TaskService.Task.title:method",
      "TaskService.Status:enum",
      "TaskService.Status.closed:method",
    ]);
  });

  it("returns null (whole-file unit) for an extension without a grammar", async () => {
    expect(await extractSymbols("README.md", "# Title\n\nfunction f() {}\n")).toBeNull();
    expect(await extractSymbols("Makefile", "all:\n\techo hi\n")).toBeNull();
  });

  it("does not throw on syntax errors and keeps the symbols tree-sitter recovers", async () => {
    const broken = `export class TaskService {
  create(a: string) {
    if (a { return 1;
  }
  remove(id: string) { return id; }
}
export function helper() { return 2; }
`;
    const ts = await names("a.ts", broken);
    expect(ts.slice(0, 2)).toEqual(["TaskService:class", "TaskService.create:method"]);

    expect(await names("a.py", "class A:\n    def f(self):\n        return (1,\n    def g(self):\n        pass\n\ndef h():\n    pass\n")).toEqual([
      "A:class",
      "A.f:method",
      "h:function",
    ]);
    expect(await names("a.go", "package p\nfunc A() { x := }\nfunc B() {}\n")).toEqual([
      "A:function",
      "B:function",
    ]);
    expect(await names("a.rs", "fn a() { let x = ; }\nstruct S { a: u8 }\nimpl S { fn b(&self) { }\n")).toEqual([
      "a:function",
      "S:struct",
      "impl S:impl",
      "S.b:method",
    ]);
    // Garbage never throws.
    for (const path of ["x.ts", "x.tsx", "x.js", "x.py", "x.go", "x.rs", "X.java"]) {
      const result = await extractSymbols(path, "}{)(][ \u0000 <<>> def class fn func impl \uD800 ````");
      expect(Array.isArray(result)).toBe(true);
      expect(await extractSymbols(path, "")).toEqual([]);
    }
  });

  it("falls back to the whole-file unit beyond the size or time budget", async () => {
    const big = "export function f() { return 1; }\n".repeat(70_000); // > 2 MiB
    expect(big.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(await extractSymbols("big.ts", big)).toBeNull();
    expect(await diffSymbols("big.ts", "", big)).toBeNull();
    expect(await extractSymbols("small.ts", "function f() {}\n", { maxBytes: 4 })).toBeNull();

    // A parse that exceeds its time budget is cancelled…
    const slow = "export function f() { return [1, 2, 3].map((x) => x * 2); }\n".repeat(20_000);
    expect(await extractSymbols("slow.ts", slow, { timeoutMs: 0 })).toBeNull();
    // …and the reused parser is fine afterwards.
    expect(await names("ok.ts", "function g() {}\n")).toEqual(["g:function"]);
  });

  it("names are unique and hashes ignore trailing whitespace and CRLF", async () => {
    const lf = "function f() {\n  return 1;\n}\n\nclass A {\n  m() {}\n}\n";
    const crlfTrailing = "function f() {   \r\n  return 1;\t\r\n}\r\n\r\n\r\nclass A {  \r\n  m() {}\r\n}\r\n";
    expect(await extractSymbols("a.ts", crlfTrailing)).toEqual(
      (await extractSymbols("a.ts", lf))?.map((s) => expect.objectContaining({ name: s.name, hash: s.hash })),
    );
    expect(normaliseSymbolText("a  \r\n\r\n  b\t\n")).toBe("a\n  b");
  });
});

describe("diffSymbols", () => {
  const before = `export class TaskService {
  create_task(title: string) {
    return { title };
  }

  delete_task(id: string) {
    return id;
  }

  list() {
    return [];
  }
}

export function helper() {
  return 1;
}
`;

  it("detects added, modified (body change) and deleted symbols and ignores the rest", async () => {
    const after = `export class TaskService {
  create_task(title: string) {
    return { title, done: false };
  }

  list() {
    return [];
  }

  archive(id: string) {
    return id;
  }
}

export function helper() {
  return 1;
}

export const extra = () => 2;
`;
    expect(await diffSymbols("src/tasks.ts", before, after)).toEqual([
      { name: "TaskService.create_task", kind: "method", change: "modified" },
      { name: "TaskService.archive", kind: "method", change: "added" },
      { name: "extra", kind: "function", change: "added" },
      { name: "TaskService.delete_task", kind: "method", change: "deleted" },
    ]);
  });

  it("a method change does not modify its class; a class-level change does", async () => {
    const field = before.replace("export class TaskService {\n", "export class TaskService {\n  private n = 0;\n");
    expect(await diffSymbols("a.ts", before, field)).toEqual([
      { name: "TaskService", kind: "class", change: "modified" },
    ]);
  });

  it("ignores trailing-whitespace-only and blank-line changes and moves", async () => {
    const ws = before.replace(/\n/g, "   \n").replace("list() {", "list() {\n\n");
    expect(await diffSymbols("a.ts", before, ws)).toEqual([]);
    expect(await diffSymbols("a.ts", before, before)).toEqual([]);
  });

  it("handles creation and deletion of a file", async () => {
    const py = "class A:\n    def f(self):\n        pass\n\ndef g():\n    pass\n";
    expect(await diffSymbols("m.py", undefined, py)).toEqual([
      { name: "A", kind: "class", change: "added" },
      { name: "A.f", kind: "method", change: "added" },
      { name: "g", kind: "function", change: "added" },
    ]);
    expect(await diffSymbols("m.py", py, undefined)).toEqual([
      { name: "A", kind: "class", change: "deleted" },
      { name: "A.f", kind: "method", change: "deleted" },
      { name: "g", kind: "function", change: "deleted" },
    ]);
    expect(await diffSymbols("m.py", undefined, undefined)).toEqual([]);
  });

  it("Go and Rust diffs use qualified names", async () => {
    const go1 = "package p\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n\nfunc Stop() {}\n";
    const go2 = "package p\n\nfunc (s *Server) Start() error {\n\treturn s.run()\n}\n";
    expect(await diffSymbols("p.go", go1, go2)).toEqual([
      { name: "Server.Start", kind: "method", change: "modified" },
      { name: "Stop", kind: "function", change: "deleted" },
    ]);
    const rs1 = "struct Foo;\nimpl Tr for Foo {\n    fn bar(&self) {}\n}\n";
    const rs2 = "struct Foo;\nimpl Tr for Foo {\n    fn bar(&self) { baz(); }\n}\n";
    expect(await diffSymbols("l.rs", rs1, rs2)).toEqual([{ name: "Foo.bar", kind: "method", change: "modified" }]);
  });

  it("returns null for an unknown extension; diffSymbolsOrFile names the file instead", async () => {
    expect(await diffSymbols("docs/guide.md", "a\n", "b\n")).toBeNull();
    expect(await diffSymbolsOrFile("docs/guide.md", "a\n", "b\n")).toEqual([
      { name: "docs/guide.md", kind: "file", change: "modified" },
    ]);
    expect(await diffSymbolsOrFile("docs/guide.md", undefined, "b\n")).toEqual([
      { name: "docs/guide.md", kind: "file", change: "added" },
    ]);
    expect(await diffSymbolsOrFile("docs/guide.md", "a\n", undefined)).toEqual([
      { name: "docs/guide.md", kind: "file", change: "deleted" },
    ]);
    expect(await diffSymbolsOrFile("docs/guide.md", "a\n", "a\n")).toEqual([]);
    // Beyond the budget a supported language also degrades to the file.
    expect(await diffSymbolsOrFile("a.ts", "function f() {}\n", "function g() {}\n", { maxBytes: 8 })).toEqual([
      { name: "a.ts", kind: "file", change: "modified" },
    ]);
    expect(await diffSymbolsOrFile("a.ts", "function f() {}\n", "function g() {}\n")).toEqual([
      { name: "g", kind: "function", change: "added" },
      { name: "f", kind: "function", change: "deleted" },
    ]);
  });

  it("diffs a 4 KiB file within the hot-path budget", async () => {
    const make = (variant: string): string => {
      let s = "export class TaskService {\n  private readonly tasks = new Map<string, Task>();\n\n";
      for (let i = 0; s.length < 3900; i++) {
        s +=
          `  update_${i}(id: string, title: string): Task | undefined {\n` +
          `    const task = this.tasks.get(id);\n    if (!task) return undefined;\n` +
          `    const next = { ...task, title: title.trim()${i === 5 ? variant : ""} };\n` +
          `    this.tasks.set(id, next);\n    return next;\n  }\n\n`;
      }
      return s + "}\n";
    };
    const a = make("");
    const b = make(" + '!'");
    expect(a.length).toBeGreaterThan(3900);
    expect(a.length).toBeLessThanOrEqual(4096);
    expect(await diffSymbols("big.ts", a, b)).toEqual([
      { name: "TaskService.update_5", kind: "method", change: "modified" },
    ]);
    // Loose timing sanity check (the real figure is measured outside the test suite).
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      await diffSymbols("big.ts", `${a}// ${i}\n`, `${b}// ${i}\n`);
      times.push(performance.now() - t);
    }
    times.sort((x, y) => x - y);
    expect(times[25]).toBeLessThan(50);
  });
});
