/**
 * The `lexground` command line: `main(argv, io)` parses the arguments and runs one command, returning its exit
 * code. Commands are declared here (so `--help` needs nothing else) and implemented in `commands/*.ts`, imported
 * only when they run: `lexground validate` never loads the AI SDK, and only `lexground mcp` loads the MCP SDK.
 *
 * Exit codes: 0 success, 1 failure (invalid knowledge, unreadable input, provider error), 2 usage error.
 *
 * @module
 */
import { Command, CommanderError } from "commander";
import { KNOWLEDGE_PRESET_NAMES } from "../knowledge/presets.js";
import { EXIT_USAGE, printJsonError, reportFailure } from "./failureReport.js";
import { type CliIo, type CommandContext, createContext } from "./io.js";
import { packageVersion } from "./packageVersion.js";

export { type CliErrorReport, EXIT_USAGE } from "./failureReport.js";

/** Options shared by the commands that search a knowledge base. */
export type RetrievalFlags = {
  kb?: string;
  integrations?: string;
  allIntegrations?: boolean;
  blockedDomains?: string;
  config?: string;
  preset?: string;
  json?: boolean;
};

function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join("\n")}\n`;
}

function addRetrievalOptions(command: Command): Command {
  return command
    .option(
      "--kb <path>",
      "knowledge base: a manifest .json, a folder of entries, or a BEIR folder (default: $LEXGROUND_KB)",
    )
    .option("--integrations <list>", "integrations enabled for the turn, comma-separated (default: none)")
    .option("--all-integrations", "enable every integration that appears in the knowledge base")
    .option("--blocked-domains <list>", "domains excluded from retrieval, comma-separated")
    .option(
      "--config <file>",
      "JSON config file {name?, preset?, retrieval?, context?, blockedDomains?, timeoutMs?}: one format for query, ask, mcp and eval",
    )
    .option(
      "--preset <name>",
      `named configuration: ${KNOWLEDGE_PRESET_NAMES.join(", ")} (default neurolink; --config fields override it)`,
    );
}

type Runner = (context: CommandContext) => Promise<number>;

/**
 * The CLI's commands: the root's output and help, then one declaration per command, in the order help lists them.
 * Each action only records which command module to run (imported lazily), so `--help` loads none of them.
 */
function buildProgram(context: CommandContext, setRunner: (runner: Runner) => void): Command {
  const program = new Command("lexground");
  configureRoot(program, context);
  declareBuildCommand(program, setRunner);
  declareValidateCommand(program, setRunner);
  declareQueryCommand(program, setRunner);
  declareAskCommand(program, setRunner);
  declareMcpCommand(program, setRunner);
  declareEvalCommand(program, setRunner);
  return program;
}

/** The root command: output through the context's streams (copied into each subcommand), description, examples. */
function configureRoot(program: Command, context: CommandContext): void {
  // Set before the subcommands are declared: commander copies these settings into each subcommand.
  program.exitOverride().configureOutput({
    writeOut: (text) => context.io.stdout.write(text),
    writeErr: (text) => context.io.stderr.write(text),
    outputError: (text, write) => write(context.err.red(text)),
  });
  program
    .description(
      "Lexical knowledge grounding for LLM turns: compile, check and query a knowledge base, ask grounded questions, serve it over MCP.",
    )
    .version(packageVersion(), "-v, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .showSuggestionAfterError(true)
    .addHelpText(
      "after",
      examples([
        "lexground build examples/knowledge-base -o manifest.json",
        "lexground validate examples/knowledge-base",
        'lexground query "how do I rotate an API key" --kb manifest.json --explain',
        'lexground ask "why was my invoice charged twice" --kb examples/knowledge-base',
        "lexground mcp --kb manifest.json",
      ]) +
        "\nRun 'lexground <command> --help' for a command's options.\nExit codes: 0 success, 1 failure, 2 usage error.\n",
    );
}

/** Declares `lexground build`; its module is imported only when it runs. */
function declareBuildCommand(program: Command, setRunner: (runner: Runner) => void): void {
  program
    .command("build")
    .description(
      "compile Markdown (front matter) and YAML/JSON entry files into a versioned knowledge manifest",
    )
    .argument("<inputs...>", "folders (catalog folders with catalog.yaml, or one flat folder) or entry files")
    .option("-o, --output <file>", "where to write the manifest (default: standard output)")
    .option("--content-version <version>", "content version for citations (default: hash of the content)")
    .option(
      "--generated-at <iso>",
      "generation timestamp (default: $SOURCE_DATE_EPOCH, else newest file mtime)",
    )
    .option("--force", "write the manifest even when validation finds errors")
    .option(
      "--index [file]",
      "also write a self-contained index artifact (default: beside the manifest, kb.json -> kb.lxg) for fast cold starts; query, ask and mcp take it as --kb kb.lxg",
    )
    .option(
      "--preset <name>",
      "index settings of the artifact: those of this preset (an engine loading the artifact alone must use the same)",
    )
    .option("--json", "print a machine-readable summary instead of text")
    .option(
      "--backend <url>",
      "also publish the knowledge base to PostgreSQL (postgres://…) as a new index generation (needs the pg package)",
    )
    .option("--backend-schema <name>", "the PostgreSQL schema of the index (default lexground)")
    .addHelpText(
      "after",
      examples([
        "lexground build examples/knowledge-base -o dist/knowledge.json",
        "lexground build examples/knowledge-base --backend postgres://localhost/app   # publish for a fleet",
        "lexground build docs/kb --content-version 2026-07-14.1 -o kb.json",
        "lexground build examples/knowledge-base -o kb.json --index   # also writes kb.lxg",
        "lexground build examples/knowledge-base -o kb.json --index --preset recommended",
        "SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) lexground build docs/kb -o kb.json",
        "lexground build entries/*.md > kb.json",
      ]) +
        "\nFolders: a folder with catalog.yaml (id, name) is one catalog; a folder of such folders is several;\nany other folder is one catalog named after it. Markdown files hold one entry in YAML front matter\n(id defaults to the file name; the Markdown is the body). YAML/JSON files hold an entry, a list, or {entries}.\n",
    )
    .action(async (inputs: string[], options) => {
      setRunner(async (ctx) => (await import("./commands/build.js")).runBuild(ctx, inputs, options));
    });
}

/** Declares `lexground validate`; its module is imported only when it runs. */
function declareValidateCommand(program: Command, setRunner: (runner: Runner) => void): void {
  program
    .command("validate")
    .description("report every validation issue and authoring problem, with file:line, entry id and field")
    .argument("<inputs...>", "a manifest .json, a folder of entries, entry files, or a BEIR folder")
    .option("--json", "print the report as JSON")
    .option("--strict", "exit 1 on warnings too")
    .addHelpText(
      "after",
      examples([
        "lexground validate examples/knowledge-base",
        "lexground validate manifest.json --json",
        "lexground validate docs/kb --strict",
      ]) +
        "\nBesides the engine's checks it warns about what the engine tolerates but authors should fix:\ntitle/id collisions between entries, aliases shadowed by another entry's title or id, and one-word\ntitles (which match every query containing that word). Exit code 1 when there are errors.\n",
    )
    .action(async (inputs: string[], options) => {
      setRunner(async (ctx) => (await import("./commands/validate.js")).runValidate(ctx, inputs, options));
    });
}

/** Declares `lexground query`; its module is imported only when it runs. */
function declareQueryCommand(program: Command, setRunner: (runner: Runner) => void): void {
  addRetrievalOptions(
    program
      .command("query")
      .description("show what one turn would select for a question: ranking, scores, confidence, context")
      .argument("[question]", "the user's question (default: --file, or standard input when piped)"),
  )
    .option("--file <path>", "read the question from a file ('-' for standard input)")
    .option("--explain", "show every candidate's score breakdown and the rendered context block")
    .option("--context", "print only the rendered context block")
    .option("--limit <n>", "primary entries to select (retrieval.resultLimit)")
    .option("--json", "print the full result as JSON")
    .option(
      "--backend <url>",
      "run the turn on the PostgreSQL index (postgres://…): publishes --kb first when given, else serves what is published",
    )
    .option("--backend-schema <name>", "the PostgreSQL schema of the index (default lexground)")
    .addHelpText(
      "after",
      examples([
        'lexground query "enable multi step flow" --kb examples/knowledge-base',
        'lexground query "sso login loop" --kb manifest.json --integrations okta,slack --explain',
        'lexground query "refund policy" --kb manifest.json --json | jq .candidates[0]',
        "lexground query --file long-question.txt --kb manifest.json",
        "pbpaste | lexground query --kb manifest.json",
      ]),
    )
    .action(async (question: string | undefined, options) => {
      setRunner(async (ctx) => (await import("./commands/query.js")).runQuery(ctx, question, options));
    });
}

/** Declares `lexground ask`; its module is imported only when it runs. */
function declareAskCommand(program: Command, setRunner: (runner: Runner) => void): void {
  addRetrievalOptions(
    program
      .command("ask")
      .description(
        "answer a question grounded in the knowledge base, with citations (offline without a provider)",
      )
      .argument("[question]", "the user's question (default: --file, or standard input when piped)"),
  )
    .option("--file <path>", "read the question from a file ('-' for standard input)")
    .option("--provider <name>", "model provider (openai, anthropic, google, openai-compatible, ...)")
    .option("--model <name>", "model name for the provider")
    .option("--system <prompt>", "system prompt placed before the knowledge block")
    .option("--no-stream", "wait for the whole answer instead of streaming it")
    .option("--offline", "never call a model: answer from the top entries' summaries")
    .option("--json", "print the answer, citations and grounding metadata as JSON")
    .option(
      "--backend <url>",
      "ground the answer in the PostgreSQL index (postgres://…): publishes --kb first when given, else serves what is published",
    )
    .option("--backend-schema <name>", "the PostgreSQL schema of the index (default lexground)")
    .addHelpText(
      "after",
      examples([
        'lexground ask "how do I turn on the guided setup" --kb examples/knowledge-base',
        'OPENAI_API_KEY=... lexground ask "why did SSO fail" --kb manifest.json --integrations okta',
        'lexground ask "refund window" --kb manifest.json --provider anthropic --model claude-sonnet-4-5',
      ]) +
        "\nWithout --provider and without a provider key in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,\nGOOGLE_GENERATIVE_AI_API_KEY) it works offline and says so: the answer is the top entries' summaries with\ntheir [KB:id@version] citations.\n",
    )
    .action(async (question: string | undefined, options) => {
      setRunner(async (ctx) => (await import("./commands/ask.js")).runAsk(ctx, question, options));
    });
}

/** Declares `lexground mcp`; its module is imported only when it runs. */
function declareMcpCommand(program: Command, setRunner: (runner: Runner) => void): void {
  addRetrievalOptions(
    program
      .command("mcp")
      .description(
        "serve the knowledge base over MCP on stdio (tools: search_knowledge, get_entry; the entries as resources)",
      ),
  )
    .option("--limit <n>", "entries a search returns when the caller gives no limit (default 8)")
    .option(
      "--backend <url>",
      "serve the PostgreSQL index (postgres://…): publishes --kb first when given, else serves what is published",
    )
    .option("--backend-schema <name>", "the PostgreSQL schema of the index (default lexground)")
    .addHelpText(
      "after",
      examples([
        "lexground mcp --kb examples/knowledge-base",
        "lexground mcp --backend postgres://app@db/app --integrations shopify   # a fleet's shared index",
        "lexground mcp --kb kb.json --integrations shopify   # calls may narrow to shopify, never add others",
        'claude mcp add kb -- npx lexground mcp --kb "$PWD/manifest.json"',
      ]) +
        "\nTool search_knowledge({query, limit?, integrations?}) returns the selected entries, their citations,\nthe confidence and the rendered context block. Tool get_entry({id}) returns one entry's full text and\ncitation. Resources lexground://entries/<id> list and read the entries. All are read-only. Requires\n@modelcontextprotocol/sdk (an optional peer dependency: npm install @modelcontextprotocol/sdk).\n" +
        "\nScope: --integrations (or --all-integrations) and --blocked-domains are the most a client can see. A call's\nintegrations only narrow them: integrations the server does not enable are ignored, so without\n--integrations every call gets integration-free entries only. No call argument unblocks a domain.\nget_entry and the resources show active entries in that scope only; any other id is not found.\n" +
        "\nWith --backend the resources are read by URI but not listed (a shared index may hold millions of entries),\nand --all-integrations is refused (name the integrations).\n",
    )
    .action(async (options) => {
      setRunner(async (ctx) => (await import("./commands/mcp.js")).runMcp(ctx, options));
    });
}

/** Declares `lexground eval`; its module is imported only when it runs. */
function declareEvalCommand(program: Command, setRunner: (runner: Runner) => void): void {
  program
    .command("eval")
    .description(
      "measure retrieval quality: nDCG@10, Recall@10/100, MRR@10, latency, confidence calibration and the block each turn hands the model (entries, tokens, precision, recall, failing queries) per configuration",
    )
    .option("--kb <path>", "knowledge base: a manifest .json, a folder of entries, or a BEIR folder")
    .option(
      "--queries <file>",
      "questions.json ([{question, expected, integrations?, passage?}]) or BEIR queries.jsonl (default: from --kb)",
    )
    .option("--qrels <file>", "judgments, BEIR TSV or TREC format (default: <BEIR folder>/qrels/<split>.tsv)")
    .option("--split <name>", "BEIR split whose qrels are used", "test")
    .option("--config <json...>", 'configurations to compare: JSON files or inline JSON, optional "name" key')
    .option(
      "--preset <name...>",
      `presets to compare as configurations (${KNOWLEDGE_PRESET_NAMES.join(", ")}), after the default`,
    )
    .option("--no-default", "do not evaluate the default configuration first")
    .option("--depth <n>", "ranking depth for the metrics (default 100)")
    .option("--keep-identical-ids", "keep a document whose id equals the query id (BEIR drops it)")
    .option("--diff", "list per-query differences between the first two configurations")
    .option("--report <file>", "also write a self-contained HTML report with plots")
    .option("--json", "print every figure (and per-query results) as JSON")
    .addHelpText(
      "after",
      examples([
        "lexground eval --kb examples/knowledge-base",
        'lexground eval --kb ../shared/datasets/scifact --config \'{"name":"english","retrieval":{"analyzer":"english"}}\' --diff',
        "lexground eval --kb manifest.json --queries questions.json --config tuned.json --report eval.html",
      ]),
    )
    .action(async (options) => {
      setRunner(async (ctx) => (await import("./commands/eval.js")).runEval(ctx, options));
    });
}

/**
 * Runs the CLI with `argv` (the arguments after the program name) against `io`, and returns the exit code. Never
 * throws and never calls `process.exit`.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const context = createContext(io);
  const json = wantsJson(argv);
  let runner: Runner | undefined;
  const program = buildProgram(context, (chosen) => {
    runner = chosen;
  });
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return 0;
    }
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (
        error.code === "commander.helpDisplayed" ||
        error.code === "commander.version" ||
        error.exitCode === 0
      ) {
        return 0;
      }
      const command = argv.find((argument) => !argument.startsWith("-"));
      const known = program.commands.some((candidate) => candidate.name() === command);
      const hint = `run 'lexground ${known ? `${command} ` : ""}--help' for usage and examples`;
      io.stderr.write(`${context.err.dim("hint")}: ${hint}\n`);
      if (json) {
        printJsonError(context, {
          code: "usage",
          message: error.message.replace(/^error: /, ""),
          hint,
          exitCode: EXIT_USAGE,
        });
      }
      return EXIT_USAGE;
    }
    return reportFailure(context, error, json);
  }
  if (!runner) return 0;
  try {
    return await runner(context);
  } catch (error) {
    return reportFailure(context, error, json);
  }
}

/** `--json` before a `--` separator: the run's errors are also printed as JSON on stdout. */
function wantsJson(argv: readonly string[]): boolean {
  const separator = argv.indexOf("--");
  return (separator === -1 ? argv : argv.slice(0, separator)).includes("--json");
}
