"""The bash command-line parser of the command policy (issue 6 item 1): every simple command a
line would run, after quote and escape removal, with wrappers unwrapped, and what cannot be
decided. Semantics: ``/work/shared/policy/README.md``."""

from __future__ import annotations

import pytest

from pi_sandbox_plugin.policies.bash_parser import (
    SimpleCommand,
    Undecidable,
    Word,
    parse_command_line,
    scan_word,
)


def items(line: str) -> list[list[str] | str]:
    """The parser's items: argv lists, and ``"?" + reason`` for undecidable parts."""
    out: list[list[str] | str] = []
    for item in parse_command_line(line).items:
        if isinstance(item, SimpleCommand):
            out.append(item.argv)
        else:
            assert isinstance(item, Undecidable)
            out.append("?" + item.reason)
    return out


# --- words --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("rm", "rm"),
        ("'rm'", "rm"),
        ('"rm"', "rm"),
        ("c''url", "curl"),
        ('c""url', "curl"),
        ("\\curl", "curl"),
        ("cu\\rl", "curl"),
        ("'c'url", "curl"),
        ("e\\ f", "e f"),
        ("$'rm'", "rm"),
        ("$'\\x63url'", "curl"),
        ("$'\\162m'", "rm"),
        ("$'\\u0063url'", "curl"),
        ("$'a\\'b'", "a'b"),
        ("$'\\t'", "\t"),
        ('$"rm"', "rm"),
        ('"a\\"b"', 'a"b'),
        ('"a\\b"', "a\\b"),
        ('"\\$(rm)"', "$(rm)"),
        ('"\\`rm\\`"', "`rm`"),
        ("'$(rm)'", "$(rm)"),
        ("a$", "a$"),
        ("{}", "{}"),
        ("-I{}", "-I{}"),
        ("--max-args=1", "--max-args=1"),
        ("~/bin/curl", "~/bin/curl"),
    ],
)
def test_scan_word_removes_quotes_and_escapes(raw: str, value: str) -> None:
    assert scan_word(raw) == Word(raw=raw, value=value, prefix=value, glob=False)


@pytest.mark.parametrize(
    ("raw", "prefix", "split"),
    [
        ("$X", "", True),
        ('"$X"', "", False),
        ("${X:-curl}", "", True),
        ("$(echo rm)", "", True),
        ('"$(echo rm)"', "", False),
        ("`printf rm`", "", True),
        ("/usr/bin/$TOOL", "/usr/bin/", True),
        ("A=$(pwd)", "A=", True),
        ('"a$1"', "a", False),
        ("$((1+2))", "", True),
        ("{rm,-rf}", "", True),
        ("x{a,b}", "x", True),
        ("{1..3}", "", True),
    ],
)
def test_scan_word_expansions_are_not_literals(raw: str, prefix: str, split: bool) -> None:
    assert scan_word(raw) == Word(raw=raw, value=None, prefix=prefix, glob=False, split=split)


@pytest.mark.parametrize(
    ("raw", "glob"),
    [("r[m]", True), ("cur?", True), ("*.c", True), ("'*.c'", False), ("\\*", False), ("[", False)],
)
def test_scan_word_globs(raw: str, glob: bool) -> None:
    assert scan_word(raw).glob is glob


# --- every simple command -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('A=1 2>/dev/null c""url -x "a b" \'c d\' e\\ f', [["curl", "-x", "a b", "c d", "e f"]]),
        (
            "ls | grep x |& wc -l; (cd d && make) || { echo no; }",
            [["ls"], ["grep", "x"], ["wc", "-l"], ["cd", "d"], ["make"], ["echo", "no"]],
        ),
        (
            "if a; then b; elif c; then d; else e; fi; while f; do g; done; until h; do i; done",
            [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"], ["h"], ["i"]],
        ),
        (
            'for x in $(seq 3); do echo "$x"; done; case $y in a) j;; b|c) k;; esac',
            [["seq", "3"], ["echo", '"$x"'], ["j"], ["k"]],
        ),
        ("f() { l; }; function g { m; }; ! n", [["l"], ["m"], ["n"]]),
        ("ls &\nrm x", [["ls"], ["rm", "x"]]),
        ("echo x#y; echo ok # ; rm z", [["echo", "x#y"], ["echo", "ok"]]),
        ("# rm -rf /", []),
        ("", []),
        ("echo ok > curl; X=wget; >rm", [["echo", "ok"]]),
        ("echo a > f b", [["echo", "a", "b"]]),
        ("ls | cat > f b; ! ls > f rm", [["ls"], ["cat", "b"], ["ls", "rm"]]),
        ("ls | >f rm x", [["ls"], ["rm", "x"]]),
        ("X=1 >out; Y=2 2>/dev/null", []),
        (">out curl x", [["curl", "x"]]),
        ("cu\\\nrl x", [["curl", "x"]]),
        ("echo 'a\\\nb'", [["echo", "a\\\nb"]]),
        (
            "echo $((1+2)) $(( $(arith) ))",
            [
                ["arith"],
                ["echo", "$((1+2))", "$(( $(arith) ))"],
                "?arithmetic evaluates a command's output, which is not a literal",
            ],
        ),
        ("for rm in a b; do :; done", [[":"]]),
        ("[[ $x == rm ]]", []),
        ("alias del='rm -v'", [["alias", "del=rm -v"]]),
        ("alias ll; alias", [["alias", "ll"], ["alias"]]),
        # an alias used later in the line is judged as what it runs, too
        (
            "shopt -s expand_aliases\nalias r=rm\nr victim",
            [
                ["shopt", "-s", "expand_aliases"],
                ["alias", "r=rm"],
                ["r", "victim"],
                ["rm", "victim"],
            ],
        ),
        (
            "alias c='curl -s' && c x.example",
            [["alias", "c=curl -s"], ["c", "x.example"], ["curl", "-s", "x.example"]],
        ),
        ("r x; alias r=rm", [["r", "x"], ["alias", "r=rm"]]),
        ("time { rm x; }", [["rm", "x"]]),
    ],
)
def test_every_simple_command_is_found(line: str, expected: list[list[str]]) -> None:
    assert items(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            'echo "$(o "$(p)")" `q` <(r) >(s) ${X:-$(t)} <<< "$(u)"',
            [
                ["u"],
                ["p"],
                ["o", '"$(p)"'],
                ["q"],
                ["r"],
                ["s"],
                ["t"],
                ["echo", '"$(o "$(p)")"', "`q`", "<(r)", ">(s)", "${X:-$(t)}"],
            ],
        ),
        ("Y=$(wget y)", [["wget", "y"]]),
        ("export T=$(curl y)", [["curl", "y"], ["export", "T=$(curl y)"]]),
        ("echo x > $(curl y)", [["curl", "y"], ["echo", "x"]]),
        ("echo '$(rm x)' \"\\$(rm y)\"", [["echo", "$(rm x)", "$(rm y)"]]),
        (
            "echo `echo \\`rm x\\``",
            [["rm", "x"], ["echo", "`rm x`"], ["echo", "`echo \\`rm x\\``"]],
        ),
        ("echo ${X:+`wget y`}", [["wget", "y"], ["echo", "${X:+`wget y`}"]]),
        ("[[ $x =~ `rm` ]]", [["rm"]]),
        ("[[ $x =~ '$(rm)' ]]", []),
        ("echo $'\\'$(rm)'", [["echo", "'$(rm)"]]),
        (
            "arr[$(rm)]=1; echo ${a[$(curl)]}",
            [
                ["rm"],
                ["curl"],
                ["echo", "${a[$(curl)]}"],
                "?the subscript of arr evaluates a command's output, which is not a literal",
                "?the subscript of a evaluates a command's output, which is not a literal",
            ],
        ),
    ],
)
def test_substitutions_are_commands(line: str, expected: list[list[str]]) -> None:
    assert items(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cat <<EOF > out\n$(v) `w` \\$(x) \\`y\\`\nEOF", [["cat"], ["v"], ["w"]]),
        ("cat <<-EOF\n\t$(wget y)\n\tEOF", [["cat"], ["wget", "y"]]),
        ("cat <<EOF\n\\`rm x\\`\nEOF", [["cat"]]),
        ("cat <<EOF; echo ok\n$(curl x)\nEOF", [["cat"], ["echo", "ok"], ["curl", "x"]]),
        ("cat <<EOF | grep x; rm y\nbody\nEOF\nls", [["cat"], ["grep", "x"], ["rm", "y"], ["ls"]]),
        ('cat <<EOF\n$(echo ")")\nEOF', [["cat"], ["echo", ")"]]),
        ("cat <<'EOF'\n$(v) `w`\nEOF", [["cat"]]),
        ("cat <<A; cat <<B\nx $(one)\nA\ny $(two)\nB", [["cat"], ["cat"], ["one"], ["two"]]),
        ("cat <<A\ncat <<B `two`\nA\nls", [["cat"], ["ls"], ["two"]]),
        ("cat <<EOF\nno end $(x)", [["cat"], ["x"]]),
        ('cat <<"EOF"\n$(v)\nEOF', [["cat"]]),
        ("cat <<\\EOF\n$(v)\nEOF", [["cat"]]),
        ("cat <<EOF\n$((1 + 2)) $HOME\nEOF\nrm x", [["cat"], ["rm", "x"]]),
    ],
)
def test_here_doc_bodies(line: str, expected: list[list[str]]) -> None:
    assert items(line) == expected


# --- wrappers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("bash -c 'a; b | c'", [["bash", "-c", "a; b | c"], ["a"], ["b"], ["c"]]),
        ("sh -ec 'rm -rf out'", [["sh", "-ec", "rm -rf out"], ["rm", "-rf", "out"]]),
        (
            "bash -o pipefail -c 'x'",
            [["bash", "-o", "pipefail", "-c", "x"], ["x"]],
        ),
        (
            'bash -c \'printf "%s\\n" "$0"\' rm',
            [["bash", "-c", 'printf "%s\\n" "$0"', "rm"], ["printf", "%s\\n", '"$0"']],
        ),
        ("bash run.sh rm", [["bash", "run.sh", "rm"]]),
        ('bash "$SCRIPT"', [["bash", '"$SCRIPT"']]),
        ("sh ./$X.sh", [["sh", "./$X.sh"]]),
        (
            "env -i -u HOME -C /tmp A=1 -- x",
            [["env", "-i", "-u", "HOME", "-C", "/tmp", "A=1", "--", "x"], ["x"]],
        ),
        ("env A=1", [["env", "A=1"]]),
        ("xargs", [["xargs"], ["echo"]]),
        ("xargs -0 -n 1 -I{} x {}", [["xargs", "-0", "-n", "1", "-I{}", "x", "{}"], ["x", "{}"]]),
        ("timeout -k 1 5 x", [["timeout", "-k", "1", "5", "x"], ["x"]]),
        ('timeout "$T" x', [["timeout", '"$T"', "x"], ["x"]]),
        ("nice -n $N x", [["nice", "-n", "$N", "x"], ["x"]]),
        ("command -v rm", [["command", "-v", "rm"]]),
        ("command -p x", [["command", "-p", "x"], ["x"]]),
        ("exec 2>&1", [["exec"]]),
        ("exec -a name x", [["exec", "-a", "name", "x"], ["x"]]),
        (
            "nice -n 5 nohup stdbuf -o L time -p x",
            [
                ["nice", "-n", "5", "nohup", "stdbuf", "-o", "L", "time", "-p", "x"],
                ["nohup", "stdbuf", "-o", "L", "time", "-p", "x"],
                ["stdbuf", "-o", "L", "time", "-p", "x"],
                ["time", "-p", "x"],
                ["x"],
            ],
        ),
        (
            "find . -name '*.c' -exec grep -l x {} + -execdir sh -c 'echo \"$1\"' _ {} \\;",
            [
                [
                    "find",
                    ".",
                    "-name",
                    "*.c",
                    "-exec",
                    "grep",
                    "-l",
                    "x",
                    "{}",
                    "+",
                    "-execdir",
                    "sh",
                    "-c",
                    'echo "$1"',
                    "_",
                    "{}",
                    ";",
                ],
                ["grep", "-l", "x", "{}"],
                ["sh", "-c", 'echo "$1"', "_", "{}"],
                ["echo", '"$1"'],
            ],
        ),
        ("find . -name x -delete", [["find", ".", "-name", "x", "-delete"]]),
        ("sudo -u root x", [["sudo", "-u", "root", "x"], ["x"]]),
        ("trap 'rm -f t' EXIT", [["trap", "rm -f t", "EXIT"], ["rm", "-f", "t"]]),
    ],
)
def test_wrappers_are_unwrapped(line: str, expected: list[list[str]]) -> None:
    assert items(line) == expected


# --- undecidable ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("eval ls", [["eval", "ls"], "?eval runs code the policy cannot inspect"]),
        ("alias $A", [["alias", "$A"], "?alias defines a name the policy cannot read: $A"]),
        (
            "hash -p /bin/rm r",
            [
                ["hash", "-p", "/bin/rm", "r"],
                "?hash -p gives a program another name the policy cannot follow",
            ],
        ),
        ("hash -r", [["hash", "-r"]]),
        (". ./env.sh", [[".", "./env.sh"], "?. runs code the policy cannot inspect"]),
        (
            "command eval true",
            [
                ["command", "eval", "true"],
                ["eval", "true"],
                "?eval runs code the policy cannot inspect",
            ],
        ),
        ("$X y", [["$X", "y"], "?the program name is not a literal: $X"]),
        ("$DIR/rm", [["$DIR/rm"], "?the program name is not a literal: $DIR/rm"]),
        (
            "/usr/bin/cur? x",
            [["/usr/bin/cur?", "x"], "?the program name is a glob pattern: /usr/bin/cur?"],
        ),
        (
            "timeout 9 $P",
            [["timeout", "9", "$P"], ["$P"], "?the program name is not a literal: $P"],
        ),
        (
            "timeout $T x",
            [["timeout", "$T", "x"], "?the command run by timeout is not a literal: $T"],
        ),
        ('env "$E" x', [["env", '"$E"', "x"], '?the command run by env is not a literal: "$E"']),
        ("xargs -0 $P", [["xargs", "-0", "$P"], "?the command run by xargs is not a literal: $P"]),
        ("bash", [["bash"], "?bash without -c or a script reads its commands from standard input"]),
        ("bash -s", [["bash", "-s"], "?bash -s reads its commands from standard input"]),
        ('sh -c "$S"', [["sh", "-c", '"$S"'], '?the sh -c string is not a literal: "$S"']),
        ("bash $ARGS", [["bash", "$ARGS"], "?an argument of bash is not a literal: $ARGS"]),
        (
            "env -S 'rm x'",
            [["env", "-S", "rm x"], "?env -S splits a string the policy does not parse"],
        ),
        (
            "find . -exec rm",
            [["find", ".", "-exec", "rm"], "?find -exec without its terminating ';' or '+'"],
        ),
        ("echo 'open", ['?the command line does not parse: unexpected " \'open" at line 1']),
        (
            "if true; then ls",
            ["?the command line does not parse: unexpected 'if true; then ls' at line 1"],
        ),
        ("ls |", ["?the command line does not parse: missing 'word' at line 1"]),
        ("echo $(ls", ["?the command line does not parse: missing ')' at line 1"]),
        ("fi", ["?the command line does not parse: unexpected 'fi'"]),
        (
            "{ ls; } > f b",
            [["ls"], "?words after a redirection of a compound command do not parse"],
        ),
        (
            "(" * 3000 + "ls" + ")" * 3000,
            ["?the parser failed: RecursionError: maximum recursion depth exceeded in comparison"],
        ),
        ("ls ;; rm", [["ls"], "?the command line does not parse: unexpected ';;'", ["rm"]]),
        # text that xargs, find -exec or parallel puts into the script of a shell's -c
        (
            "xargs -I{} bash -c {}",
            [
                ["xargs", "-I{}", "bash", "-c", "{}"],
                ["bash", "-c", "{}"],
                "?the script bash -c runs is filled in by xargs at run time",
            ],
        ),
        (
            "xargs -I% sh -c 'echo %'",
            [
                ["xargs", "-I%", "sh", "-c", "echo %"],
                ["sh", "-c", "echo %"],
                "?the script sh -c runs is filled in by xargs at run time",
            ],
        ),
        (
            "xargs -I{} env bash -c 'echo {}'",
            [
                ["xargs", "-I{}", "env", "bash", "-c", "echo {}"],
                ["env", "bash", "-c", "echo {}"],
                ["bash", "-c", "echo {}"],
                "?the script bash -c runs is filled in by xargs at run time",
            ],
        ),
        (
            "find . -exec bash -c {} \\;",
            [
                ["find", ".", "-exec", "bash", "-c", "{}", ";"],
                ["bash", "-c", "{}"],
                "?the script bash -c runs is filled in by find at run time",
            ],
        ),
        (
            "parallel bash -c ::: 'rm v'",
            [
                ["parallel", "bash", "-c", ":::", "rm v"],
                ["bash", "-c", "{}"],
                "?the script bash -c runs is filled in by parallel at run time",
            ],
        ),
        # a shell that reads its script from a stream or from a command's output
        (
            "bash /dev/stdin",
            [["bash", "/dev/stdin"], "?bash reads its script from a stream: /dev/stdin"],
        ),
        (
            "sh //dev/./fd/0",
            [["sh", "//dev/./fd/0"], "?sh reads its script from a stream: //dev/./fd/0"],
        ),
        (
            "bash -- /proc/self/fd/0",
            [
                ["bash", "--", "/proc/self/fd/0"],
                "?bash reads its script from a stream: /proc/self/fd/0",
            ],
        ),
        (
            "bash /proc/1/task/1/fd/3",
            [
                ["bash", "/proc/1/task/1/fd/3"],
                "?bash reads its script from a stream: /proc/1/task/1/fd/3",
            ],
        ),
        (
            "bash <(echo ls)",
            [
                ["echo", "ls"],
                ["bash", "<(echo ls)"],
                "?bash runs the output of a process substitution: <(echo ls)",
            ],
        ),
        (
            "bash -x <(echo rm v)",
            [
                ["echo", "rm", "v"],
                ["bash", "-x", "<(echo rm v)"],
                "?bash runs the output of a process substitution: <(echo rm v)",
            ],
        ),
        # programs that are another program whatever their name says
        (
            "/proc/self/exe -c 'rm v'",
            [
                ["/proc/self/exe", "-c", "rm v"],
                "?the program is a process's own executable: /proc/self/exe",
            ],
        ),
        (
            "proc/1/task/1/exe x",
            [
                ["proc/1/task/1/exe", "x"],
                "?the program is a process's own executable: proc/1/task/1/exe",
            ],
        ),
        ("/dev/fd/3 v", [["/dev/fd/3", "v"], "?the program is read from a stream: /dev/fd/3"]),
        (
            "ld.so --audit a.so /bin/true",
            [
                ["ld.so", "--audit", "a.so", "/bin/true"],
                "?the dynamic loader's --audit loads code the policy cannot read",
            ],
        ),
        (
            "ld-linux-x86-64.so.2 --bogus /bin/rm",
            [
                ["ld-linux-x86-64.so.2", "--bogus", "/bin/rm"],
                "?--bogus is an option of ld-linux-x86-64.so.2 the policy does not know",
            ],
        ),
        (
            "tar -xf a.tar --to-command='rm v'",
            [
                ["tar", "-xf", "a.tar", "--to-command=rm v"],
                "?tar --to-command runs a command the policy does not judge",
            ],
        ),
        (
            "tar --use-compress=x -cf a x",
            [
                ["tar", "--use-compress=x", "-cf", "a", "x"],
                "?tar --use-compress-program runs a command the policy does not judge",
            ],
        ),
        (
            "tar -cvIf x a.tar",
            [["tar", "-cvIf", "x", "a.tar"], "?tar -cvIf runs a command the policy does not judge"],
        ),
        (
            "valgrind -q rm v",
            [
                ["valgrind", "-q", "rm", "v"],
                "?valgrind starts a program the policy does not follow: valgrind",
            ],
        ),
        (
            'cat <<"$x"\n$x\nrm v',
            ['?a here-doc delimiter with an expansion in it: "$x"'],
        ),
        (
            "x=$(cat <<'E'\nE)\nrm v\nE\n)",
            ["?a here-doc line that may end it: E)"],
        ),
        (
            "cat <<E\nEO\\\nF\nE",
            [
                "?a here-doc in a command line with a backslash-newline (bash joins the lines of"
                " some here-doc bodies and not of others)"
            ],
        ),
        (
            "rsync -ave ssh a b:c",
            [
                ["rsync", "-ave", "ssh", "a", "b:c"],
                "?rsync -ave runs a command the policy does not judge",
            ],
        ),
    ],
)
def test_undecidable(line: str, expected: list[list[str] | str]) -> None:
    assert items(line) == expected


def test_nesting_is_bounded() -> None:
    # each watch joins the rest into a command line that is parsed again, one level deeper
    line = "watch " * 20 + "x"
    reasons = [u.reason for u in parse_command_line(line).undecidable]
    assert reasons == ["command strings nest more than 12 levels deep"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # the filled-in words are arguments, not the shell's script
        (
            "xargs bash -c 'echo \"$@\"' _",
            [
                ["xargs", "bash", "-c", 'echo "$@"', "_"],
                ["bash", "-c", 'echo "$@"', "_"],
                ["echo", '"$@"'],
            ],
        ),
        ("find . -exec echo {} \\;", [["find", ".", "-exec", "echo", "{}", ";"], ["echo", "{}"]]),
        # files whose names only look like a stream
        ("bash /dev/stdin.sh", [["bash", "/dev/stdin.sh"]]),
        ("rbash -c 'rm v'", [["rbash", "-c", "rm v"], ["rm", "v"]]),
        (
            "/lib64/ld-linux-x86-64.so.2 /bin/rm v",
            [["/lib64/ld-linux-x86-64.so.2", "/bin/rm", "v"], ["/bin/rm", "v"]],
        ),
        (
            "ld.so --library-path /l --argv0 x rm v",
            [["ld.so", "--library-path", "/l", "--argv0", "x", "rm", "v"], ["rm", "v"]],
        ),
        ("tar --checkpoint=1 -cf a x", [["tar", "--checkpoint=1", "-cf", "a", "x"]]),
        ("tar tvf a.tar", [["tar", "tvf", "a.tar"]]),
        ("rsync -av --exclude e a b", [["rsync", "-av", "--exclude", "e", "a", "b"]]),
        ("bash ./dev/stdin-notes", [["bash", "./dev/stdin-notes"]]),
    ],
)
def test_filled_arguments_and_script_files_stay_decidable(
    line: str, expected: list[list[str] | str]
) -> None:
    assert items(line) == expected
