/**
 * gRPC server reflection, v1 and v1alpha (same wire shape), built from the generated file
 * descriptors of the served services and their transitive dependencies (well-known types
 * included), so that tools such as `buf curl` and grpcurl work without a schema.
 */
import { toBinary, type DescFile, type DescEnum, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { registration, type ServiceRegistration } from "../api/handler.js";
import { GrpcCode } from "./status.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** Index of files and symbols; immutable once built. */
export class ReflectionIndex {
  readonly serviceNames: readonly string[];
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly messages = new Set<string>();
  private readonly encoded = new Map<string, Uint8Array>();

  constructor(services: readonly DescService[]) {
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    for (const s of services) this.addFile(s.file);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const t of nestedTypes(file)) {
      switch (t.kind) {
        case "service":
          this.symbols.set(t.typeName, file);
          for (const m of t.methods) this.symbols.set(`${t.typeName}.${m.name}`, file);
          break;
        case "message":
          this.symbols.set(t.typeName, file);
          this.messages.add(t.typeName);
          for (const f of t.fields) this.symbols.set(`${t.typeName}.${f.name}`, file);
          for (const o of t.oneofs) this.symbols.set(`${t.typeName}.${o.name}`, file);
          break;
        case "enum":
          this.symbols.set(t.typeName, file);
          for (const v of t.values) this.symbols.set(enumValueName(t, v.name), file);
          break;
        case "extension":
          this.symbols.set(t.typeName, file);
          break;
      }
    }
    for (const dep of file.dependencies) this.addFile(dep);
  }

  private encode(file: DescFile): Uint8Array {
    let bytes = this.encoded.get(file.name);
    if (bytes === undefined) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      this.encoded.set(file.name, bytes);
    }
    return bytes;
  }

  /** The file and its transitive dependencies (the file first), encoded. */
  private withDeps(file: DescFile): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile): void => {
      if (seen.has(f.name)) return;
      seen.add(f.name);
      out.push(this.encode(f));
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return out;
  }

  fileByName(name: string): Uint8Array[] | undefined {
    const f = this.files.get(name);
    return f && this.withDeps(f);
  }

  fileContainingSymbol(symbol: string): Uint8Array[] | undefined {
    const s = symbol.startsWith(".") ? symbol.slice(1) : symbol;
    const f = this.symbols.get(s);
    return f && this.withDeps(f);
  }

  hasMessage(typeName: string): boolean {
    return this.messages.has(typeName);
  }
}

function enumValueName(e: DescEnum, value: string): string {
  // Enum values are scoped to the enum's parent (C++ scoping rules).
  const parent = e.typeName.includes(".") ? e.typeName.slice(0, e.typeName.lastIndexOf(".")) : "";
  return parent ? `${parent}.${value}` : value;
}

// Both versions have the same structure; the handler is written once against v1's types.
type Req = v1.ServerReflectionRequest;
type Res = MessageInitShape<typeof v1.ServerReflectionResponseSchema>;

function answer(index: ReflectionIndex, req: Req): Res {
  const base = { validHost: req.host, originalRequest: req };
  const notFound = (what: string): Res => ({
    ...base,
    messageResponse: { case: "errorResponse", value: { errorCode: GrpcCode.NOT_FOUND, errorMessage: `${what} not found` } },
  });
  const files = (fds: Uint8Array[]): Res => ({
    ...base,
    messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: fds } },
  });
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return {
        ...base,
        messageResponse: { case: "listServicesResponse", value: { service: index.serviceNames.map((name) => ({ name })) } },
      };
    case "fileByFilename": {
      const fds = index.fileByName(r.value);
      return fds ? files(fds) : notFound(`file "${r.value}"`);
    }
    case "fileContainingSymbol": {
      const fds = index.fileContainingSymbol(r.value);
      return fds ? files(fds) : notFound(`symbol "${r.value}"`);
    }
    case "fileContainingExtension":
      return notFound(`extension ${r.value.extensionNumber} of "${r.value.containingType}"`);
    case "allExtensionNumbersOfType":
      return index.hasMessage(r.value)
        ? { ...base, messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: [] } } }
        : notFound(`type "${r.value}"`);
    case undefined:
      return {
        ...base,
        messageResponse: { case: "errorResponse", value: { errorCode: GrpcCode.INVALID_ARGUMENT, errorMessage: "empty request" } },
      };
  }
}

async function* serve(index: ReflectionIndex, requests: AsyncIterable<Req>): AsyncGenerator<Res> {
  for await (const req of requests) yield answer(index, req);
}

/**
 * Reflection v1 and v1alpha registrations describing `services` (pass every served service,
 * reflection itself included if it should be listed).
 */
export function reflectionRegistrations(services: readonly DescService[]): ServiceRegistration[] {
  const all = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const index = new ReflectionIndex(all);
  return [
    registration(v1.ServerReflection, {
      serverReflectionInfo: (requests) => serve(index, requests),
    }),
    registration(v1alpha.ServerReflection, {
      // v1alpha messages are wire- and shape-identical to v1's.
      serverReflectionInfo: (requests) => serve(index, requests as unknown as AsyncIterable<Req>) as never,
    }),
  ];
}

