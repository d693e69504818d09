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
:class:`~pi_sandbox_plugin.policies.command_policy.CommandPolicy` (:func:`merged`).

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

``aliases`` are other names of a subcommand (git's ``send-pack`` and ``http-push`` push).

Rules that name options. A grammar's :class:`Options` (``options``, by subcommand: ``""`` for
the program's own, ``"push"`` for ``git push``) give every spelling of each option one name:
``-r``, ``-R`` and ``--recursive`` are rm's ``recursive``. A rule whose words after its
subcommand hold options (``["rm", "-rf"]``, ``["git", "push", "--force"]``) then matches a
command holding those options in any order and spelling (``rm -fr``, ``rm -r -f``, ``rm
--recursive --force``, ``rm -rfv``, ``rm x -rf``: GNU getopt permutes) and the rule's other words
as its first operands; ``--`` ends the options (``rm -- -rf`` names a file). An option the table
does not know, or a word that is not a literal where options may be, is undecidable when the rule
needs an option the command does not show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class WordLike(Protocol):
    """What a grammar needs of a shell word (:class:`~pi_sandbox_plugin.policies.bash_parser.Word`)."""

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
class ReadOptions:
    """What :meth:`Options.read` found in a command's words: the options ``present`` (by
    name), the ``operands`` in order, and ``unsure``, why some word may hold options the table
    cannot read (``None`` when every word was read)."""

    present: frozenset[str]
    operands: tuple[WordLike, ...]
    unsure: str | None = None


@dataclass(frozen=True)
class Options:
    """The options of a program, or of one of its subcommands, by name.

    ``spellings`` maps each spelling (``-r``, ``--recursive``) to the option's name; ``values``
    are the names taking a value (the next word, attached ``-oVALUE``, or ``--opt=VALUE``);
    ``optional`` the names taking a value only when attached with ``=``; ``implies``: an option
    that is another one too (git push's ``--mirror`` forces); ``permute``: options may follow
    operands (GNU getopt, git); ``plus_operand``: an operand ``+x`` is that option (git push's
    ``+main`` forces); ``operand_pattern``: a word it matches in full is an operand (chmod's
    ``-w``); ``negatable``: ``--no-NAME`` turns an option off (git)."""

    spellings: Mapping[str, str]
    values: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    implies: Mapping[str, str] = field(default_factory=dict)
    permute: bool = True
    plus_operand: str = ""
    operand_pattern: str = ""
    negatable: bool = False

    def _long(self, given: str) -> str | None:
        """The name of ``--given`` (an unambiguous prefix of a long option is that option)."""
        exact = self.spellings.get("--" + given)
        if exact is not None:
            return exact
        if self.negatable and given.startswith("no-"):
            positive = self._long(given[3:])
            return "no-" + positive if positive is not None else None
        names = {n for s, n in self.spellings.items() if s.startswith("--" + given)}
        return names.pop() if len(names) == 1 else None

    def read(self, words: Sequence[WordLike], program: str) -> ReadOptions:
        """The options and operands of ``words`` (the words after the program or subcommand)."""
        present: set[str] = set()
        operands: list[WordLike] = []
        unsure: str | None = None
        pattern = re.compile(self.operand_pattern) if self.operand_pattern else None
        only_operands = False
        i = 0
        while i < len(words):
            w = words[i]
            v = w.value
            i += 1
            if only_operands:
                operands.append(w)
                continue
            if v is None:
                if w.split or not w.prefix or w.prefix.startswith("-"):
                    unsure = unsure or f"{w.raw} may hold options of {program}"
                operands.append(w)
                continue
            if v == "--":
                only_operands = True
                continue
            if pattern is not None and pattern.fullmatch(v):
                operands.append(w)
                continue
            if v.startswith("--"):
                given, eq, _ = v[2:].partition("=")
                name = self._long(given)
                if name is None:
                    unsure = unsure or f"{v} is an option of {program} the policy does not know"
                    continue
                present.add(name)
                if name in self.values and not eq:
                    i += 1
                continue
            if v.startswith("-") and len(v) > 1:
                for k, ch in enumerate(v[1:], start=1):
                    name = self.spellings.get("-" + ch)
                    if name is None:
                        unsure = (
                            unsure or f"-{ch} is an option of {program} the policy does not know"
                        )
                        break
                    present.add(name)
                    if name in self.values:
                        i += 1 if k == len(v) - 1 else 0
                        break
                continue
            if self.plus_operand and v.startswith("+"):
                present.add(self.plus_operand)
            operands.append(w)
            only_operands = not self.permute
        for name in list(present):
            if name in self.implies:
                present.add(self.implies[name])
        return ReadOptions(frozenset(present), tuple(operands), unsure)


def options(
    spec: str,
    values: str = "",
    optional: str = "",
    **kw: Any,
) -> Options:
    """:class:`Options` from ``spec``: ``NAME=-x --xlong, NAME2=-y`` (each name with its
    spellings); ``values``/``optional``: names, blank-separated."""
    spellings: dict[str, str] = {}
    for group in spec.split(","):
        name, _, spelled = group.strip().partition("=")
        for spelling in spelled.split():
            spellings[spelling] = name
    return Options(spellings, frozenset(values.split()), frozenset(optional.split()), **kw)


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
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Other names of a subcommand (git's ``send-pack``: ``push``)."""
    options: Mapping[str, Options] = field(default_factory=dict)
    """The options of the program (``""``) and of its subcommands (``"push"``), for rules that
    name options."""

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


_GIT_PUSH = options(
    "all=--all, branches=--branches, prune=--prune, mirror=--mirror, dry-run=-n --dry-run, "
    "porcelain=--porcelain, delete=-d --delete, tags=--tags, follow-tags=--follow-tags, "
    "signed=--signed, atomic=--atomic, push-option=-o --push-option, "
    "receive-pack=--receive-pack --exec, force-with-lease=--force-with-lease, force=-f --force, "
    "force-if-includes=--force-if-includes, repo=--repo, set-upstream=-u --set-upstream, "
    "thin=--thin, quiet=-q --quiet, verbose=-v --verbose, progress=--progress, "
    "recurse-submodules=--recurse-submodules, verify=--verify, ipv4=-4 --ipv4, ipv6=-6 --ipv6",
    values="push-option receive-pack repo",
    optional="signed force-with-lease recurse-submodules",
    implies={"mirror": "force", "force-with-lease": "force"},
    plus_operand="force",
    negatable=True,
)
"""git push's options: ``--force``, ``-f``, a ``+refspec``, ``--mirror`` and
``--force-with-lease`` all force."""

_GIT_CLEAN = options(
    "directories=-d, force=-f --force, interactive=-i --interactive, dry-run=-n --dry-run, "
    "quiet=-q --quiet, exclude=-e --exclude, ignored=-x, only-ignored=-X",
    values="exclude",
    negatable=True,
)
_GIT_RESET = options(
    "soft=--soft, mixed=--mixed, hard=--hard, merge=--merge, keep=--keep, quiet=-q --quiet, "
    "patch=-p --patch, intent-to-add=-N --intent-to-add, recurse-submodules=--recurse-submodules, "
    "pathspec-from-file=--pathspec-from-file, pathspec-file-nul=--pathspec-file-nul, "
    "refresh=--refresh",
    values="pathspec-from-file",
    optional="recurse-submodules",
    negatable=True,
)
_GIT_BRANCH = options(
    "delete=-d --delete, force=-f --force, force-delete=-D, move=-m --move, force-move=-M, "
    "copy=-c --copy, force-copy=-C, list=-l --list, all=-a --all, remotes=-r --remotes, "
    "verbose=-v -vv --verbose, quiet=-q --quiet, track=-t --track, set-upstream-to=-u "
    "--set-upstream-to, unset-upstream=--unset-upstream, contains=--contains, merged=--merged, "
    "no-merged=--no-merged, points-at=--points-at, sort=--sort, format=--format, "
    "show-current=--show-current, edit-description=--edit-description, color=--color, "
    "column=--column, abbrev=--abbrev, ignore-case=-i --ignore-case, create-reflog=--create-reflog",
    values="set-upstream-to points-at sort format",
    optional="track contains merged no-merged color column abbrev",
    implies={"force-delete": "delete", "force-move": "move", "force-copy": "copy"},
    negatable=True,
)

_GIT = _g(
    value="-C -c --git-dir --work-tree --namespace --super-prefix --config-env --exec-path "
    "--attr-source",
    flags="-p --paginate -P --no-pager --bare --no-replace-objects --no-lazy-fetch "
    "--literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs "
    "--no-optional-locks --no-advice",
    stop="--help -h --version -v --html-path --man-path --info-path --exec-path --list-cmds",
    dashed=True,
    aliases={
        "send-pack": "push",
        "http-push": "push",
        **{f"remote-{t}": "push" for t in ("http", "https", "ftp", "ftps", "ext", "fd")},
    },
    options={"push": _GIT_PUSH, "clean": _GIT_CLEAN, "reset": _GIT_RESET, "branch": _GIT_BRANCH},
)
"""git; its other names of ``push``: ``send-pack`` and ``http-push`` push, and a remote helper
(``remote-https``, ...) pushes what its standard input asks."""
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
_RM = options(
    "force=-f --force, i=-i, I=-I, interactive=--interactive, "
    "one-file-system=--one-file-system, no-preserve-root=--no-preserve-root, "
    "preserve-root=--preserve-root, recursive=-r -R --recursive, dir=-d --dir, "
    "verbose=-v --verbose, help=--help, version=--version",
    optional="interactive preserve-root",
)
"""GNU rm's options."""

_COPY_COMMON = (
    "backup=-b --backup, force=-f --force, interactive=-i --interactive, "
    "no-clobber=-n --no-clobber, strip-trailing-slashes=--strip-trailing-slashes, "
    "suffix=-S --suffix, target-directory=-t --target-directory, "
    "no-target-directory=-T --no-target-directory, update=-u --update, verbose=-v --verbose, "
    "context=-Z --context, help=--help, version=--version, debug=--debug"
)
_CP = options(
    _COPY_COMMON + ", archive=-a --archive, attributes-only=--attributes-only, "
    "copy-contents=--copy-contents, no-dereference-preserve-links=-d, "
    "dereference-command-line=-H, link=-l --link, dereference=-L --dereference, "
    "no-dereference=-P --no-dereference, preserve-defaults=-p, preserve=--preserve, "
    "no-preserve=--no-preserve, parents=--parents, recursive=-r -R --recursive, "
    "reflink=--reflink, remove-destination=--remove-destination, sparse=--sparse, "
    "symbolic-link=-s --symbolic-link, one-file-system=-x --one-file-system, "
    "keep-directory-symlink=--keep-directory-symlink",
    values="suffix target-directory no-preserve sparse",
    optional="backup update context preserve reflink",
    implies={"archive": "recursive"},
)
"""GNU cp's options."""
_MV = options(
    _COPY_COMMON + ", no-copy=--no-copy, exchange=--exchange",
    values="suffix target-directory",
    optional="backup update context",
)
"""GNU mv's options."""

_CHMOD_FLAGS = (
    "-R --recursive -v --verbose -c --changes -f --silent --quiet --preserve-root "
    "--no-preserve-root -h --no-dereference -H -L -P --dereference"
)
_CHANGE_OPTIONS = (
    "recursive=-R --recursive, verbose=-v --verbose, changes=-c --changes, "
    "silent=-f --silent --quiet, preserve-root=--preserve-root, "
    "no-preserve-root=--no-preserve-root, no-dereference=-h --no-dereference, "
    "dereference=--dereference, traverse-command-line=-H, traverse-all=-L, traverse-none=-P, "
    "reference=--reference, help=--help, version=--version"
)
_MODE = r"[-+=][-+=,ugoarwxXst0-7]*"
_CHMOD = _g(
    value="--reference",
    flags=_CHMOD_FLAGS,
    stop="--help --version",
    clusters=True,
    operand_pattern=_MODE,
    options={"": options(_CHANGE_OPTIONS, values="reference", operand_pattern=_MODE)},
)
_CHOWN = _g(
    value="--reference --from",
    flags=_CHMOD_FLAGS,
    stop="--help --version",
    clusters=True,
    options={"": options(_CHANGE_OPTIONS + ", from=--from", values="reference from")},
)

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
    "rm": ProgramGrammar(options={"": _RM}),
    "cp": ProgramGrammar(options={"": _CP}),
    "mv": ProgramGrammar(options={"": _MV}),
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
    return ProgramGrammar(**fields, aliases=start.aliases, options=start.options)


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
    "Options",
    "ProgramGrammar",
    "ReadOptions",
    "Undecided",
    "WordLike",
    "grammar_from_table",
    "merged",
    "options",
]
