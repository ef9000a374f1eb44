/**
 * berth completion bash|zsh — a completion script generated from the command tree itself, so it
 * never lags behind the commands: subcommands at each level, then that command's options.
 * zsh runs the same function through bashcompinit.
 */
import { InvalidArgumentError, type Command } from "commander";

/** "" for the top level, "repos", "repos add", …: the words that may follow each command path. */
function words(command: Command, path: string, out: Map<string, string[]>, globals: string[]): void {
  const subs = command.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  const options = command.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  out.set(path, [...subs.flatMap((c) => [c.name(), ...c.aliases()]), ...options, ...(path === "" ? [] : globals), "--help"]);
  for (const sub of subs) {
    for (const name of [sub.name(), ...sub.aliases()]) words(sub, path === "" ? name : `${path} ${name}`, out, globals);
  }
}

export function completionScript(program: Command, shell: "bash" | "zsh"): string {
  const table = new Map<string, string[]>();
  const globals = program.options.flatMap((o) => (o.long ? [o.long] : []));
  words(program, "", table, globals);
  const cases = [...table].map(([path, w]) => `    "${path}") echo "${w.join(" ")}" ;;`).join("\n");
  const body = `_berth_words() {
  case "$1" in
${cases}
  esac
}

_berth() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w i next
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    next="\${path:+$path }$w"
    [[ -n "$(_berth_words "$next")" ]] && path="$next"
  done
  COMPREPLY=($(compgen -W "$(_berth_words "$path")" -- "$cur"))
  [[ \${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -F _berth berth
`;
  if (shell === "bash") return `# berth completion for bash: eval "$(berth completion bash)", or save it under /etc/bash_completion.d/\n${body}`;
  return `#compdef berth\n# berth completion for zsh: eval "$(berth completion zsh)" in ~/.zshrc\nautoload -U +X bashcompinit && bashcompinit\n${body}`;
}

function parseShell(raw: string): "bash" | "zsh" {
  if (raw === "bash" || raw === "zsh") return raw;
  throw new InvalidArgumentError("expected bash or zsh");
}

export function registerCompletion(program: Command): void {
  program
    .command("completion")
    .description('print a shell completion script: eval "$(berth completion bash)" (or zsh)')
    .argument("<shell>", "bash or zsh", parseShell)
    .action((shell: "bash" | "zsh") => {
      process.stdout.write(completionScript(program, shell));
    });
}
