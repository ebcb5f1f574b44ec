import type { Command } from "@effect/cli"
import type * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"
import { Option } from "effect"

/**
 * `mtg … --help`, rendered here from the command definitions themselves
 * (the `Command`, `Options` and `Args` values @effect/cli parses with), so
 * the help cannot drift from what is parsed. @effect/cli's own renderer
 * prints each flag's value type as a sentence ("A user-defined piece of
 * text."), shows a subcommand's usage as `$ create`, marks repeatable flags
 * as required, and lays the command list out as one row per command, hundreds
 * of columns wide, with no way to wrap it.
 *
 * The definitions are read through the instruction trees @effect/cli 0.77
 * builds (`_tag` Standard / Subcommands / Map for commands; Single, Both,
 * WithDefault, Variadic, … for options and arguments). Those trees are
 * internal to @effect/cli, so test/client/cli.test.ts renders every command's help
 * and checks each flag has a description and each line fits: a change of
 * the trees' shape in a later @effect/cli fails there, not silently.
 */

/** One flag as help shows it. */
export interface FlagHelp {
  /** `--model`, and any alias (`-m`). */
  readonly names: ReadonlyArray<string>
  /** What follows the flag (`ID`, `frame|images|media`); none for a switch. */
  readonly value: string | undefined
  readonly optional: boolean
  readonly repeated: boolean
  /** The value used when the flag is absent, when there is one worth showing. */
  readonly defaultValue: string | undefined
  readonly description: string
}

/** One positional argument. */
export interface ArgHelp {
  readonly name: string
  readonly optional: boolean
  readonly repeated: boolean
  readonly description: string
}

export interface CommandHelp {
  /** `["mtg", "video", "create"]`. */
  readonly path: ReadonlyArray<string>
  readonly description: string
  readonly flags: ReadonlyArray<FlagHelp>
  readonly args: ReadonlyArray<ArgHelp>
  readonly subcommands: ReadonlyArray<CommandHelp>
}

/** A node of one of @effect/cli's instruction trees (see the module's comment). */
interface Node {
  readonly _tag: string
  readonly [field: string]: any
}

const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

/** A description's paragraphs as one run of text. */
export const docText = (doc: HelpDoc.HelpDoc): string => {
  switch (doc._tag) {
    case "Empty":
      return ""
    case "Header":
    case "Paragraph":
      return spanText(doc.value).trim()
    case "Sequence":
      return [docText(doc.left), docText(doc.right)].filter((t) => t !== "").join(" ")
    case "Enumeration":
      return doc.elements.map(docText).join(" ")
    case "DescriptionList":
      return doc.definitions.map(([span, d]) => `${spanText(span)}: ${docText(d)}`).join(" ")
  }
}

const dashed = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`)

/** The placeholder of a value of this primitive type when the definition names none. */
const placeholder = (primitive: Node): string | undefined => {
  switch (primitive._tag) {
    case "Bool":
      return undefined
    case "Choice":
      return primitive.alternatives.map(([name]: readonly [string, unknown]) => name).join("|")
    case "Integer":
      return "N"
    case "Float":
      return "NUMBER"
    case "DateTime":
      return "DATE"
    case "Path":
      return primitive.pathType === "directory" ? "DIR" : primitive.pathType === "file" ? "FILE" : "PATH"
    case "Secret":
    case "Redacted":
      return "SECRET"
    default:
      return "TEXT"
  }
}

/** A fallback worth printing: not `Option.none()` (an optional flag) and not a switch's `false`. */
const shownDefault = (fallback: unknown): string | undefined =>
  Option.isOption(fallback) || typeof fallback === "boolean" || fallback === undefined || fallback === null
    ? undefined
    : String(fallback)

interface Modifiers {
  readonly optional: boolean
  readonly repeated: boolean
  readonly defaultValue: string | undefined
}

const plain: Modifiers = { optional: false, repeated: false, defaultValue: undefined }

const flagsOf = (node: Node, mods: Modifiers = plain): Array<FlagHelp> => {
  switch (node._tag) {
    case "Empty":
      return []
    case "Single":
      return [{
        names: [dashed(node.name), ...node.aliases.map(dashed)],
        value: Option.getOrElse(node.pseudoName as Option.Option<string>, () => placeholder(node.primitiveType)),
        ...mods,
        description: docText(node.description)
      }]
    case "KeyValueMap":
      return flagsOf(node.argumentOption, { ...mods, repeated: true })
    case "Map":
    case "WithFallback":
      return flagsOf(node.options, mods)
    case "Both":
    case "OrElse":
      return [...flagsOf(node.left, mods), ...flagsOf(node.right, mods)]
    case "Variadic": {
      const min = Option.getOrElse(node.min as Option.Option<number>, () => 0)
      return flagsOf(node.argumentOption, { ...mods, repeated: true, optional: mods.optional || min === 0 })
    }
    case "WithDefault":
      return flagsOf(node.options, { ...mods, optional: true, defaultValue: shownDefault(node.fallback) })
    default:
      throw new Error(`mtg help: an option of an unknown kind (${node._tag})`)
  }
}

const argsOf = (node: Node, mods: Modifiers = plain): Array<ArgHelp> => {
  switch (node._tag) {
    case "Empty":
      return []
    case "Single":
      return [{
        name: Option.getOrElse(node.pseudoName as Option.Option<string>, () => placeholder(node.primitiveType)!)
          .toUpperCase(),
        optional: mods.optional,
        repeated: mods.repeated,
        description: docText(node.description)
      }]
    case "Map":
    case "WithFallbackConfig":
      return argsOf(node.args, mods)
    case "Both":
      return [...argsOf(node.left, mods), ...argsOf(node.right, mods)]
    case "Variadic": {
      const min = Option.getOrElse(node.min as Option.Option<number>, () => 0)
      return argsOf(node.args, { ...mods, repeated: true, optional: mods.optional || min === 0 })
    }
    case "WithDefault":
      return argsOf(node.args, { ...mods, optional: true })
    default:
      throw new Error(`mtg help: an argument of an unknown kind (${node._tag})`)
  }
}

const describeNode = (node: Node, parent: ReadonlyArray<string>): CommandHelp => {
  switch (node._tag) {
    case "Map":
      return describeNode(node.command, parent)
    case "Standard":
      return {
        path: [...parent, node.name],
        description: docText(node.description),
        flags: flagsOf(node.options),
        args: argsOf(node.args),
        subcommands: []
      }
    case "Subcommands": {
      const self = describeNode(node.parent, parent)
      return { ...self, subcommands: node.children.map((child: Node) => describeNode(child, self.path)) }
    }
    default:
      throw new Error(`mtg help: a command of an unknown kind (${node._tag})`)
  }
}

/** What help shows of a command and everything under it. */
export const describeCommand = (command: Command.Command<any, any, any, any>): CommandHelp =>
  describeNode((command as unknown as { readonly descriptor: Node }).descriptor, [])

/** The flags of a group of options (`common`), e.g. to show them apart. */
export const describeOptions = (options: unknown): ReadonlyArray<FlagHelp> => flagsOf(options as Node)

/** Every command that runs something (no subcommands), depth first. */
export const leaves = (command: CommandHelp): ReadonlyArray<CommandHelp> =>
  command.subcommands.length === 0 ? [command] : command.subcommands.flatMap(leaves)

/**
 * The command a command line is about: the subcommands named, in order, from
 * the root; flags and a first word that names no subcommand end the walk.
 */
export const commandAt = (root: CommandHelp, args: ReadonlyArray<string>): CommandHelp => {
  let at = root
  for (const arg of args) {
    if (arg === "--") break
    if (arg.startsWith("-")) continue
    const next = at.subcommands.find((c) => c.path.at(-1) === arg)
    if (next === undefined) break
    at = next
  }
  return at
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

export const WIDTH = 100

/** `text` in lines of at most `width` columns, words kept whole (a longer word gets a line of its own). */
export const wrap = (text: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line === "") line = word
    else if (line.length + 1 + word.length <= width) line += ` ${word}`
    else {
      lines.push(line)
      line = word
    }
  }
  if (line !== "") lines.push(line)
  return lines
}

/** Rows of `label  description`, descriptions in one column, wrapped under themselves. */
const table = (rows: ReadonlyArray<readonly [string, string]>, indent = 2, widest = 28): Array<string> => {
  const column = Math.min(widest, Math.max(...rows.map(([label]) => label.length)))
  const at = indent + column + 2
  return rows.flatMap(([label, description]) => {
    const text = wrap(description, WIDTH - at)
    const head = `${" ".repeat(indent)}${label}`
    if (label.length > column || text.length === 0) {
      return [head, ...text.map((line) => `${" ".repeat(at)}${line}`)]
    }
    return [
      `${head.padEnd(at)}${text[0]}`,
      ...text.slice(1).map((line) => `${" ".repeat(at)}${line}`)
    ]
  })
}

/** `--model ID`, `-h, --help`. */
const flagLabel = (flag: FlagHelp) =>
  `${[...flag.names].sort((a, b) => a.length - b.length).join(", ")}${flag.value === undefined ? "" : ` ${flag.value}`}`

/** The flag as usage shows it: `--model ID`, `[--wait]`, `[--image FILE|URL]...`. */
export const usageToken = (flag: FlagHelp) => {
  const core = `${flag.names[0]}${flag.value === undefined ? "" : ` ${flag.value}`}`
  return `${flag.optional ? `[${core}]` : core}${flag.repeated ? "..." : ""}`
}

const argToken = (arg: ArgHelp) => {
  const core = `${arg.name}${arg.repeated ? "..." : ""}`
  return arg.optional ? `[${core}]` : core
}

const flagDescription = (flag: FlagHelp) =>
  [
    flag.description,
    flag.repeated ? "Repeatable." : "",
    flag.defaultValue === undefined ? "" : `(default: ${flag.defaultValue})`
  ].filter((t) => t !== "").join(" ")

/** A flag's row in a table of flags. */
const flagRow = (flag: FlagHelp) => [flagLabel(flag), flagDescription(flag)] as const

/** Words (usage tokens) laid out after `lead`, continuation lines indented by `hang`. */
const flow = (lead: string, tokens: ReadonlyArray<string>, hang: number): Array<string> => {
  const lines: Array<string> = []
  let line = lead
  for (const token of tokens) {
    if (line.length + 1 + token.length <= WIDTH) line += ` ${token}`
    else {
      lines.push(line)
      line = `${" ".repeat(hang)}${token}`
    }
  }
  lines.push(line)
  return lines
}

/** The first sentence of a description, for a list of commands. */
const summary = (description: string) => /^(.*?[.!?])(\s|$)/.exec(description)?.[1] ?? description

export interface HelpContext {
  /** Flags every command takes, listed under COMMON OPTIONS rather than each command's own. */
  readonly common: ReadonlyArray<FlagHelp>
  /** @effect/cli's built-in flags that help lists (`--help`, `--version`, …). */
  readonly builtIn: ReadonlyArray<FlagHelp>
  /** Closing lines of the root's help (exit codes, where the docs are). */
  readonly footer: ReadonlyArray<string>
  readonly version: string
}

const section = (title: string, lines: ReadonlyArray<string>) => (lines.length === 0 ? [] : ["", title, ...lines])

const commandList = (commands: ReadonlyArray<CommandHelp>) =>
  table(commands.map((c) => [c.path.slice(1).join(" "), summary(c.description)] as const), 2, 20)

/** The help of one command (a group lists its commands; a command its usage and flags), at most WIDTH columns. */
export const renderHelp = (command: CommandHelp, context: HelpContext): string => {
  const name = command.path.join(" ")
  const isRoot = command.path.length === 1
  const commonNames = new Set(context.common.map((f) => f.names[0]))
  const lines: Array<string> = [
    ...wrap(`${isRoot ? `${name} ${context.version}: ` : `${name}: `}${command.description}`, WIDTH)
  ]
  if (command.subcommands.length > 0) {
    lines.push(
      ...section("USAGE", [`  ${name} <command> [options]`]),
      ...section("COMMANDS", commandList(leaves(command))),
      ...section(
        isRoot ? "COMMON OPTIONS (every command)" : "OPTIONS",
        table([...(isRoot ? context.common : []), ...context.builtIn].map(flagRow))
      ),
      "",
      ...wrap(`Run \`${name} <command> --help\` for a command's options.`, WIDTH),
      ...(isRoot ? context.footer.flatMap((l) => ["", ...wrap(l, WIDTH)]) : [])
    )
    return lines.join("\n")
  }
  const own = command.flags.filter((f) => !commonNames.has(f.names[0]))
  // Required flags first, then the optional ones, each group in the order of the definition.
  const ordered = [...own.filter((f) => !f.optional), ...own.filter((f) => f.optional)]
  const common = command.flags.filter((f) => commonNames.has(f.names[0]))
  lines.push(
    ...section(
      "USAGE",
      flow(
        `  ${name}`,
        [...ordered.map(usageToken), ...command.args.map(argToken), ...(common.length > 0 ? ["[common options]"] : [])],
        4
      )
    ),
    ...section(
      "ARGUMENTS",
      command.args.length === 0 ? [] : table(command.args.map((a) => [a.name, a.description] as const))
    ),
    ...section("OPTIONS", ordered.length === 0 ? [] : table(ordered.map(flagRow))),
    ...section(
      "COMMON OPTIONS",
      table([...common, ...context.builtIn.filter((f) => f.names.includes("--help"))].map(flagRow))
    )
  )
  return lines.join("\n")
}
