// `trainyard completion bash|zsh`: a completion script written from the CLI11 command table at
// run time, so every verb and option the binary has is completed and none it lacks. Job
// arguments are completed with the ids `trainyard ls -o name` lists (against --server when the
// command line names one), -o with the output forms.
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/client.h"
#include "cli/commands.h"

namespace trainyard::cli {
namespace {

struct Verb {
  std::string name, help;
  std::vector<std::string> options;  // every spelling: -o, --output, -h, --help
  std::vector<std::string> valued;   // those that take a value
  std::vector<std::string> subcommands;
  bool takes_job = false;  // a positional "job" or "jobs"
};

std::vector<Verb> verbs_of(const CLI::App& app) {
  std::vector<Verb> out;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    if (name.empty() || name.front() == '_') continue;
    Verb v{.name = name, .help = sub->get_description()};
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_positional() && !opt->nonpositional()) {
        const std::string p = opt->get_name(true);
        v.takes_job = v.takes_job || p == "job" || p == "jobs";
        continue;
      }
      for (const auto& s : opt->get_snames()) {
        v.options.push_back("-" + s);
        if (opt->get_type_size() != 0) v.valued.push_back("-" + s);
      }
      for (const auto& l : opt->get_lnames()) {
        v.options.push_back("--" + l);
        if (opt->get_type_size() != 0) v.valued.push_back("--" + l);
      }
    }
    for (const CLI::App* nested : sub->get_subcommands({}))
      v.subcommands.push_back(nested->get_name());
    out.push_back(std::move(v));
  }
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// A shell `case` over the verbs: VERB) echo "WORDS";; for each verb with words.
std::string verb_case(const std::vector<Verb>& verbs,
                      const std::function<std::vector<std::string>(const Verb&)>& words) {
  std::string out;
  for (const auto& v : verbs) {
    const auto w = words(v);
    if (!w.empty()) out += fmt::format("    {}) echo '{}' ;;\n", v.name, joined(w));
  }
  return out;
}

std::vector<std::string> job_verbs(const std::vector<Verb>& verbs) {
  std::vector<std::string> out;
  for (const auto& v : verbs)
    if (v.takes_job) out.push_back(v.name);
  return out;
}

// Shared by both shells (zsh runs it with bash-compatible syntax): which words go with a verb,
// and the ids of the jobs the server lists.
std::string helper_functions(const std::vector<Verb>& verbs) {
  return fmt::format(
      R"SH(_trainyard_options() {{
  case "$1" in
{}  esac
}}
_trainyard_valued() {{
  case "$1" in
{}  esac
}}
_trainyard_subcommands() {{
  case "$1" in
{}  esac
}}
# $1: the trainyard binary; $2: --server's value, if the command line gives one.
_trainyard_job_ids() {{
  if [ -n "$2" ]; then
    "$1" ls -o name --limit 200 --server "$2" 2>/dev/null | sed 's#^job/##'
  else
    "$1" ls -o name --limit 200 2>/dev/null | sed 's#^job/##'
  fi
}}
_trainyard_verbs='{}'
_trainyard_job_verbs=' {} '
_trainyard_states='pending admitted placed running preempting succeeded failed cancelled'
)SH",
      verb_case(verbs, [](const Verb& v) { return v.options; }),
      verb_case(verbs, [](const Verb& v) { return v.valued; }),
      verb_case(verbs, [](const Verb& v) { return v.subcommands; }), joined([&] {
        std::vector<std::string> names;
        for (const auto& v : verbs) names.push_back(v.name);
        return names;
      }()),
      joined(job_verbs(verbs)));
}

constexpr const char* kBashMain = R"SH(_trainyard() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" verb="" server="" i w
  [ "$COMP_CWORD" -gt 0 ] && prev="${COMP_WORDS[COMP_CWORD-1]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    if [ "$w" = "--server" ]; then server="${COMP_WORDS[i+1]}"; fi
    if [ "$w" = "--log-level" ]; then i=$((i + 1)); continue; fi
    if [ -z "$verb" ] && [ "${w#-}" = "$w" ]; then verb="$w"; fi
  done
  if [ -z "$verb" ]; then
    COMPREPLY=($(compgen -W "$_trainyard_verbs --help --version --log-level" -- "$cur"))
    return 0
  fi
  case " $(_trainyard_valued "$verb") " in
    *" $prev "*)
      case "$prev" in
        -o|--output) COMPREPLY=($(compgen -W "wide json yaml name" -- "$cur")) ;;
        --state) COMPREPLY=($(compgen -W "$_trainyard_states" -- "$cur")) ;;
        --for) COMPREPLY=($(compgen -W "$(printf 'state=%s ' $_trainyard_states)" -- "$cur")) ;;
        *) COMPREPLY=() ;;
      esac
      return 0 ;;
  esac
  if [ "${cur#-}" != "$cur" ]; then
    COMPREPLY=($(compgen -W "$(_trainyard_options "$verb")" -- "$cur"))
    return 0
  fi
  local subs
  subs="$(_trainyard_subcommands "$verb")"
  if [ -n "$subs" ]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  elif [ "${_trainyard_job_verbs#* $verb }" != "$_trainyard_job_verbs" ]; then
    COMPREPLY=($(compgen -W "$(_trainyard_job_ids "${COMP_WORDS[0]}" "$server")" -- "$cur"))
  else
    COMPREPLY=()
  fi
  return 0
}
complete -F _trainyard trainyard
)SH";

constexpr const char* kZshMain = R"SH(_trainyard() {
  local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}" verb="" server="" i w
  for ((i = 2; i < CURRENT; i++)); do
    w="${words[i]}"
    if [[ "$w" == "--server" ]]; then server="${words[i+1]}"; fi
    if [[ "$w" == "--log-level" ]]; then (( i++ )); continue; fi
    if [[ -z "$verb" && "$w" != -* ]]; then verb="$w"; fi
  done
  if [[ -z "$verb" ]]; then
    if [[ "$cur" == -* ]]; then
      compadd -- --help --version --log-level
    else
      _describe -t commands 'trainyard command' _trainyard_verb_help
    fi
    return
  fi
  if [[ " $(_trainyard_valued "$verb") " == *" $prev "* ]]; then
    case "$prev" in
      -o|--output) compadd -- wide json yaml name ;;
      --state) compadd -- ${=_trainyard_states} ;;
      --for) compadd -- ${${=_trainyard_states}/#/state=} ;;
      *) _files ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    compadd -- ${=$(_trainyard_options "$verb")}
    return
  fi
  local subs="$(_trainyard_subcommands "$verb")"
  if [[ -n "$subs" ]]; then
    compadd -- ${=subs}
  elif [[ "$_trainyard_job_verbs" == *" $verb "* ]]; then
    compadd -- ${(f)"$(_trainyard_job_ids "${words[1]}" "$server")"}
  fi
}
if ! (( $+functions[compdef] )); then
  autoload -Uz compinit && compinit
fi
compdef _trainyard trainyard
)SH";

// zsh's _describe entries: 'name:help', colons in the help escaped, quotes doubled.
std::string zsh_verb_help(const std::vector<Verb>& verbs) {
  std::string out = "_trainyard_verb_help=(\n";
  for (const auto& v : verbs) {
    std::string help;
    for (char c : v.help) {
      if (c == '\'')
        help += "'\\''";
      else if (c == ':')
        help += "\\:";
      else
        help += c;
    }
    out += fmt::format("  '{}:{}'\n", v.name, help);
  }
  return out + ")\n";
}

}  // namespace

Runner add_completion_command(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "completion", "Print a shell completion script: source <(trainyard completion bash), or zsh");
  cmd->add_option("shell", *shell, "bash or zsh")->required();
  return [shell, &app] {
    const std::vector<Verb> verbs = verbs_of(app);
    if (*shell == "bash") {
      std::cout << "# bash completion for trainyard: source <(trainyard completion bash)\n"
                << helper_functions(verbs) << kBashMain;
      return kExitOk;
    }
    if (*shell == "zsh") {
      std::cout << "#compdef trainyard\n# zsh completion for trainyard: source <(trainyard "
                   "completion zsh)\n"
                << helper_functions(verbs) << zsh_verb_help(verbs) << kZshMain;
      return kExitOk;
    }
    return report("completion", util::invalid_argument(fmt::format(
                                    "the shell must be bash or zsh, got '{}'", *shell)));
  };
}

}  // namespace trainyard::cli
