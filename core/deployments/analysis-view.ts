/** The Analyze result as the API shows it (snake_case): in an operation's child state and on version records. */
export function analysisView(a: Record<string, unknown>) {
  return {
    runtime: a.runtime,
    framework: a.framework,
    output_dir: a.outputDir,
    install_command: a.installCommand,
    build_command: a.buildCommand,
    start_command: a.startCommand,
    package_manager: a.packageManager,
    node_version: a.nodeVersion,
    file_count: a.fileCount,
    total_size: a.totalSize,
    unwrapped_prefix: a.strippedPrefix,
    warnings: [...((a.archiveWarnings as string[]) ?? []), ...((a.warnings as string[]) ?? [])],
    reasons: a.reasons,
    analyzer: a.analyzer,
  };
}
