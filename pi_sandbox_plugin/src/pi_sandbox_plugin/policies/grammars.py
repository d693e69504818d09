"""Program grammars: the options a program takes before its subcommand.

A command rule such as ``["git", "push"]`` compares ``push`` with the word where git's
subcommand is. Without knowing git's grammar that is argv[1], so ``git -C . push`` or
``git --no-pager push`` would slip past the rule. A :class:`ProgramGrammar` says which words
before the subcommand are options, and which of those take a value, so the policy finds the
subcommand the way the program itself does.

:data:`BUILTIN_GRAMMARS` holds git, docker, podman, kubectl, helm, npm, pnpm, yarn, cargo, pip,
uv, go, make, terraform, aws, gh, systemctl, sudo, chmod, chown and chgrp. The table is
extended (or an entry replaced) by ``[sandbox.policy.grammars.NAME]`` in ``pi.toml``
(:func:`grammar_from_table`), or in Python by passing ``grammars=`` to
:class:`~pi_sandbox_plugin.command_policy.CommandPolicy` (:func:`merged`).

How the subcommand is found (:meth:`ProgramGrammar.operand`), word by word:

* ``--`` ends the options: the next word is the operand;
* a word matching ``operand_pattern`` (a regular expression, e.g. chmod's ``-w`` mode) is the
  operand;
* a ``stop_options`` word (``--version``, ``--help``) *is* the operand: it acts as the
  subcommand and the rest is not the subcommand git would run;
* ``--name=value`` / ``-name=value`` of a known option is one word; a ``value_options`` word
  takes the next word as its value; with ``attached``, ``-Cdir`` and ``-C=dir`` are one word;
  with ``clusters``, grouped short flags (``-qv``, the last one may take a value) are one word;
* with ``any_operand``, every operand is tried as the subcommand (make's targets);
* with ``dashed``, ``NAME-SUB`` is ``NAME SUB`` (git's ``git-push`` in its exec path);
* with ``plus_words``, ``+word`` is skipped (cargo's ``+nightly``); with ``assignments``,
  ``NAME=VALUE`` is skipped (make's ``make CC=gcc deploy``); ``optional_numeric`` options
  take the next word only when it is a number (make's ``-j 4`` and ``-j``);
* any other word starting with ``-`` is an option the table does not know: the policy cannot
  tell whether it takes a value, so the match is **undecidable and the line is denied** (it
  fails closed) when a rule compares a word there;
* the first other word is the operand.

A value that is not a literal and not quoted (``-C $DIR``) may split into several words at run
time, and an unquoted glob may expand to several: both are undecidable where they stand before
the compared word. ``interspersed`` programs (kubectl, helm, aws, gh, systemctl, npm, pnpm, make)
also accept their global options between subcommand words, so options are skipped before every
word of a rule, not only the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class WordLike(Protocol):
    """What a grammar needs of a shell word (:class:`~pi_sandbox_plugin.bash_parser.Word`)."""

    @property
    def raw(self) -> str: ...

    @property
    def value(self) -> str | None: ...

    @property
    def prefix(self) -> str: ...

    @property
    def glob(self) -> bool: ...

    @property
    def split(self) -> bool: ...


@dataclass(frozen=True)
class Undecided:
    """The operand cannot be found statically; ``why`` says which word prevents it."""

    why: str


@dataclass(frozen=True)
class ProgramGrammar:
    """The options a program takes before its subcommand (or first operand).

    Option names are written with their dashes (``"-C"``, ``"--git-dir"``, terraform's
    ``"-chdir"``). See the module docstring for how a command's words are read.
    """

    value_options: frozenset[str] = frozenset()
    """Options taking a value: the next word, or joined with ``=``."""
    flag_options: frozenset[str] = frozenset()
    """Options taking no value."""
    stop_options: frozenset[str] = frozenset()
    """Options that act as the subcommand (``--version``): matching stops there."""
    optional_numeric: frozenset[str] = frozenset()
    """Options taking the next word as a value only when it is a number (make's ``-j``)."""
    attached: bool = False
    """A short value option may hold its value in the same word (``-Cdir``, ``-C=dir``)."""
    clusters: bool = False
    """Short flags may be grouped in one word (``-qv``)."""
    plus_words: bool = False
    """A word starting with ``+`` is an option (cargo's ``+nightly``)."""
    assignments: bool = False
    """A ``NAME=VALUE`` word is skipped (make's variable assignments)."""
    interspersed: bool = False
    """The options may also appear between the words of a subcommand (``kubectl delete -n x
    pod``): they are skipped before every word a rule compares."""
    any_operand: bool = False
    """Every operand is a subcommand (make's targets: ``make build deploy`` runs ``deploy``):
    a rule's first word is compared with each of them."""
    dashed: bool = False
    """``NAME-SUB`` is the program ``NAME`` with the subcommand ``SUB`` (git's
    ``/usr/lib/git-core/git-push``)."""
    operand_pattern: str = ""
    """A regular expression: a word it matches in full is the operand even when it starts
    with ``-`` (chmod's ``-w``)."""

    def _known(self, name: str) -> bool:
        return name in self.value_options or name in self.flag_options

    def operand(
        self, words: Sequence[WordLike], start: int, program: str = "the program"
    ) -> int | Undecided:
        """The index of the first operand at or after ``start`` (``len(words)`` when there is
        none), skipping the options this grammar knows; :class:`Undecided` when a word there
        cannot be read statically (``program`` names the program in its reason)."""
        pattern = re.compile(self.operand_pattern) if self.operand_pattern else None
        i = start
        while i < len(words):
            w = words[i]
            v = w.value
            if v is None:
                joined = w.prefix.split("=", 1)[0] if "=" in w.prefix else None
                if joined is not None and w.prefix.startswith("-") and self._known(joined):
                    if w.split:
                        return Undecided(f"{w.raw} may split into several words")
                    i += 1
                    continue
                return i  # compared as it stands: not a literal
            if v == "--":
                return i + 1
            if pattern is not None and pattern.fullmatch(v):
                return i
            if v in self.stop_options:
                return i
            if v in self.value_options:
                if i + 1 < len(words):
                    problem = _unsure_value(words[i + 1])
                    if problem is not None:
                        return Undecided(problem)
                i += 2
                continue
            if v in self.optional_numeric:
                nxt = words[i + 1].value if i + 1 < len(words) else None
                i += 2 if nxt is not None and nxt.isdigit() else 1
                continue
            if v in self.flag_options:
                i += 1
                continue
            if v.startswith("-") and "=" in v and self._known(v.split("=", 1)[0]):
                i += 1
                continue
            if self.plus_words and v.startswith("+") and len(v) > 1:
                i += 1
                continue
            if self.assignments and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*=.*", v, re.DOTALL):
                i += 1
                continue
            if v.startswith("-") and len(v) > 1:
                taken = self._short(v, words, i)
                if isinstance(taken, Undecided):
                    return taken
                if taken:
                    i += taken
                    continue
                return Undecided(f"{v} is an option of {program} the policy does not know")
            if w.glob:
                return i  # compared as it stands
            return i
        return i

    def _short(self, v: str, words: Sequence[WordLike], i: int) -> int | Undecided:
        """How many words a short option word takes (0: not known)."""
        if v.startswith("--"):
            return 0
        if self.attached and v[:2] in self.value_options:
            return 1  # -Cdir, -C=dir
        if v[:2] in self.optional_numeric and v[2:].isdigit():
            return 1  # -j4
        if not self.clusters:
            return 0
        for k, ch in enumerate(v[1:], start=1):
            opt = "-" + ch
            if opt in self.flag_options:
                continue
            if opt in self.value_options:
                if k < len(v) - 1:
                    return 1 if self.attached else 0
                if i + 1 < len(words):
                    problem = _unsure_value(words[i + 1])
                    if problem is not None:
                        return Undecided(problem)
                return 2
            return 0
        return 1


def _unsure_value(word: WordLike) -> str | None:
    """Why the value word of an option may become several words at run time, or ``None``."""
    if word.value is None and (word.split or re.search(r"\$\{?@|\[[@*]\]", word.raw)):
        return f"the value {word.raw} may split into several words"
    if word.value is not None and word.glob:
        return f"the value {word.raw} is a glob pattern that may expand to several words"
    return None


def _g(
    value: str = "",
    flags: str = "",
    stop: str = "--help -h --version",
    **kw: Any,
) -> ProgramGrammar:
    return ProgramGrammar(
        value_options=frozenset(value.split()),
        flag_options=frozenset(flags.split()),
        stop_options=frozenset(stop.split()),
        **kw,
    )


_GIT = _g(
    value="-C -c --git-dir --work-tree --namespace --super-prefix --config-env --exec-path "
    "--attr-source",
    flags="-p --paginate -P --no-pager --bare --no-replace-objects --no-lazy-fetch "
    "--literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs "
    "--no-optional-locks --no-advice",
    stop="--help -h --version -v --html-path --man-path --info-path --exec-path --list-cmds",
    dashed=True,
)
_DOCKER = _g(
    value="-H --host --context -c --config -l --log-level --tlscacert --tlscert --tlskey",
    flags="-D --debug --tls --tlsverify",
    stop="--help -h --version -v",
    attached=True,
    clusters=True,
)
_PODMAN = _g(
    value="-c --connection --url --identity --root --runroot --storage-driver --storage-opt "
    "--log-level --cgroup-manager --runtime --runtime-flag --events-backend --tmpdir "
    "--network-cmd-path --network-config-dir --conmon --module --ssh --hooks-dir --volumepath "
    "--imagestore --config --out --cni-config-dir",
    flags="-r --remote --syslog --noout --debug",
    stop="--help -h --version -v",
    attached=True,
    clusters=True,
)
_KUBECTL = _g(
    value="-n --namespace --context --kubeconfig -s --server --cluster --user --token --as "
    "--as-group --as-uid --certificate-authority --client-certificate --client-key "
    "--request-timeout --cache-dir --tls-server-name -v --v --vmodule --profile "
    "--profile-output --password --username",
    flags="--insecure-skip-tls-verify --match-server-version --warnings-as-errors "
    "--disable-compression",
    stop="--help -h",
    attached=True,
    interspersed=True,
)
_HELM = _g(
    value="-n --namespace --kube-context --kubeconfig --registry-config --repository-cache "
    "--repository-config --kube-apiserver --kube-as-user --kube-as-group --kube-ca-file "
    "--kube-token --burst-limit --qps --kube-tls-server-name",
    flags="--debug --kube-insecure-skip-tls-verify",
    stop="--help -h",
    attached=True,
    interspersed=True,
)
_NPM = _g(
    value="--prefix -w --workspace --userconfig --globalconfig --cache --registry --loglevel "
    "--location --tag --otp",
    flags="-g --global -ws --workspaces --include-workspace-root -s --silent -q --quiet -d -dd "
    "-ddd --verbose -y --yes --no-yes --json --dry-run --force -f --offline --no-audit "
    "--no-fund --ignore-scripts --legacy-peer-deps",
    stop="--help -h --version -v",
    interspersed=True,
)
_PNPM = _g(
    value="-C --dir --filter -F --reporter --loglevel --workspace-concurrency --store-dir",
    flags="-w --workspace-root -r --recursive -s --silent --stream --aggregate-output "
    "--parallel --no-bail --frozen-lockfile --offline",
    stop="--help -h --version -v",
    attached=True,
    interspersed=True,
)
_YARN = _g(
    value="--cwd --modules-folder --cache-folder --global-folder --mutex --network-timeout "
    "--registry",
    flags="-s --silent --verbose --offline --frozen-lockfile --no-progress --non-interactive "
    "--ignore-engines",
    stop="--help -h --version -v",
)
_CARGO = _g(
    value="-C --config -Z --color --manifest-path --explain",
    flags="-v -vv --verbose -q --quiet --frozen --locked --offline",
    stop="--help -h --version -V --list --explain",
    attached=True,
    clusters=True,
    plus_words=True,
)
_PIP = _g(
    value="--python --log --cache-dir --proxy --retries --timeout --exists-action "
    "--trusted-host --cert --client-cert --use-feature --use-deprecated --keyring-provider "
    "--progress-bar",
    flags="-v --verbose -q --quiet --isolated --require-virtualenv --no-input --no-cache-dir "
    "--disable-pip-version-check --no-color --debug --no-python-version-warning",
    stop="--help -h --version -V",
    clusters=True,
)
_UV = _g(
    value="--directory --project --cache-dir --config-file --color --python-preference "
    "--allow-insecure-host",
    flags="-q --quiet -v --verbose --offline --no-cache -n --native-tls --preview --no-preview "
    "--no-config --no-progress --managed-python --no-managed-python --no-python-downloads",
    stop="--help -h --version -V",
    clusters=True,
)
_GO = _g(value="-C", stop="--help -h")
_MAKE = _g(
    value="-C --directory -f --file --makefile -I --include-dir -o --old-file --assume-old "
    "-W --what-if --new-file --assume-new --eval",
    flags="-s --silent --quiet -k --keep-going -S --no-keep-going --stop -n --just-print "
    "--dry-run --recon -B --always-make -i --ignore-errors -e --environment-overrides -r "
    "--no-builtin-rules -R --no-builtin-variables -w --print-directory --no-print-directory "
    "-q --question -t --touch -p --print-data-base -d -L --check-symlink-times --trace "
    "--warn-undefined-variables -O --output-sync --jobs --load-average --debug",
    optional_numeric=frozenset({"-j", "-l"}),
    stop="--help -h --version -v",
    attached=True,
    clusters=True,
    assignments=True,
    interspersed=True,
    any_operand=True,
)
_TERRAFORM = _g(value="-chdir", stop="-help -h --help -version -v --version")
_AWS = _g(
    value="--profile --region --endpoint-url --output --query --cli-read-timeout "
    "--cli-connect-timeout --ca-bundle --color --cli-binary-format",
    flags="--debug --no-verify-ssl --no-paginate --no-cli-pager --no-sign-request "
    "--cli-auto-prompt --no-cli-auto-prompt",
    stop="--help --version",
    interspersed=True,
)
_GH = _g(value="-R --repo --hostname", stop="--help -h --version", interspersed=True)
_SYSTEMCTL = _g(
    value="-H --host -M --machine -t --type -p --property -s --signal --state --root "
    "--kill-whom --kill-value --job-mode -n --lines -o --output --what --timestamp "
    "--preset-mode --message --image --reboot-argument --boot-loader-menu "
    "--boot-loader-entry --when --drop-in",
    flags="--user --system --global -q --quiet --no-block --no-pager --no-legend "
    "--no-ask-password -a --all -r --recursive -l --full -f --force -i --ignore-inhibitors "
    "--check-inhibitors --now --runtime --dry-run --show-types --value --failed --plain "
    "--wait -T --show-transaction --reverse --after --before --no-reload --no-warn",
    stop="--help -h --version",
    attached=True,
    clusters=True,
    interspersed=True,
)
_SUDO = _g(
    value="-u --user -g --group -p --prompt -C --close-from -D --chdir -r --role -t --type "
    "-T --command-timeout -U --other-user -h --host -R --chroot",
    flags="-A --askpass -b --background -E --preserve-env -e --edit -H --set-home -i --login "
    "-K --remove-timestamp -k --reset-timestamp -l --list -n --non-interactive -P "
    "--preserve-groups -S --stdin -s --shell -v --validate -B --bell -N --no-update",
    stop="--help --version -V",
    attached=True,
    clusters=True,
)
_CHMOD_FLAGS = (
    "-R --recursive -v --verbose -c --changes -f --silent --quiet --preserve-root "
    "--no-preserve-root -h --no-dereference -H -L -P --dereference"
)
_CHMOD = _g(
    value="--reference",
    flags=_CHMOD_FLAGS,
    stop="--help --version",
    clusters=True,
    operand_pattern=r"[-+=][-+=,ugoarwxXst0-7]*",
)
_CHOWN = _g(value="--reference --from", flags=_CHMOD_FLAGS, stop="--help --version", clusters=True)

BUILTIN_GRAMMARS: Mapping[str, ProgramGrammar] = {
    "git": _GIT,
    "docker": _DOCKER,
    "podman": _PODMAN,
    "nerdctl": _DOCKER,
    "kubectl": _KUBECTL,
    "oc": _KUBECTL,
    "helm": _HELM,
    "npm": _NPM,
    "pnpm": _PNPM,
    "yarn": _YARN,
    "cargo": _CARGO,
    "pip": _PIP,
    "pip3": _PIP,
    "uv": _UV,
    "go": _GO,
    "make": _MAKE,
    "gmake": _MAKE,
    "terraform": _TERRAFORM,
    "tofu": _TERRAFORM,
    "aws": _AWS,
    "gh": _GH,
    "systemctl": _SYSTEMCTL,
    "sudo": _SUDO,
    "chmod": _CHMOD,
    "chown": _CHOWN,
    "chgrp": _CHOWN,
}
"""The grammars pi knows, by program basename."""

GRAMMAR_KEYS = frozenset(
    {
        "value_options",
        "flag_options",
        "stop_options",
        "optional_numeric",
        "attached",
        "clusters",
        "plus_words",
        "assignments",
        "interspersed",
        "any_operand",
        "dashed",
        "operand_pattern",
        "extend",
    }
)
"""The keys of a ``[sandbox.policy.grammars.NAME]`` table."""


def grammar_from_table(
    name: str, table: Mapping[str, Any], base: Mapping[str, ProgramGrammar] = BUILTIN_GRAMMARS
) -> ProgramGrammar:
    """The grammar of a ``[sandbox.policy.grammars.NAME]`` table (already validated).

    With ``extend = true`` (the default) the option lists are added to the built-in entry of
    ``name`` when there is one, and the flags given replace its flags; ``extend = false``
    starts from nothing.
    """
    start = base.get(name) if table.get("extend", True) else None
    start = start or ProgramGrammar()
    fields: dict[str, Any] = {}
    for key in ("value_options", "flag_options", "stop_options", "optional_numeric"):
        fields[key] = getattr(start, key) | frozenset(table.get(key, ()))
    for key in (
        "attached",
        "clusters",
        "plus_words",
        "assignments",
        "interspersed",
        "any_operand",
        "dashed",
        "operand_pattern",
    ):
        fields[key] = table.get(key, getattr(start, key))
    return ProgramGrammar(**fields)


def merged(
    extra: Mapping[str, ProgramGrammar] | Iterable[tuple[str, ProgramGrammar]] = (),
    base: Mapping[str, ProgramGrammar] = BUILTIN_GRAMMARS,
) -> dict[str, ProgramGrammar]:
    """``base`` with the entries of ``extra`` added or replacing those of the same name."""
    out = dict(base)
    out.update(dict(extra))
    return out


__all__ = [
    "BUILTIN_GRAMMARS",
    "GRAMMAR_KEYS",
    "ProgramGrammar",
    "Undecided",
    "WordLike",
    "grammar_from_table",
    "merged",
]
