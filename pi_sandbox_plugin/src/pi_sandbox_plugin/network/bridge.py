"""The bridge inside a sandbox without a network: a loopback port that leads to the proxy's Unix
socket, and the command started once it listens.

Run by the backend as the sandbox's command (:func:`bridge_argv`)::

    PYTHON -I -S -c SOURCE SOCKET PORT COMMAND...

It binds ``127.0.0.1:PORT`` in the sandbox's own network namespace (its loopback is the only
interface there), starts ``COMMAND`` and copies each connection to that port to a new
connection to ``SOCKET`` (the proxy, bound into the sandbox) and back, until the command exits;
it then exits with the command's status (a command killed by signal ``N`` kills it with ``N``,
so bwrap reports ``128 + N`` as before). Standard library only, nothing imported from pi: it runs
with the host's interpreter in isolated mode (``-I -S``), whatever the sandbox sees of the
virtual environment.
"""

from __future__ import annotations

SOURCE = r"""
import os, signal, socket, sys, threading

def pump(src, dst):
    read, write = os.pipe()
    try:
        while True:
            count = os.splice(src.fileno(), write, 1048576)
            if not count:
                break
            while count:
                count -= os.splice(read, dst.fileno(), count)
    except OSError:
        pass
    finally:
        os.close(read)
        os.close(write)
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def pair(client, path):
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()

def serve(server, path):
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=pair, args=(client, path), daemon=True).start()

def main():
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    if port == 0:
        sys.stdout.write("%d\n" % server.getsockname()[1])
        sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        server.close()
        try:
            os.execvp(command[0], command)
        except OSError as error:
            sys.stderr.write("pi network bridge: %s: %s\n" % (command[0], error.strerror))
            os._exit(127)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=serve, args=(server, path), daemon=True).start()
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status))

main()
"""

PORT = 3128
"""The loopback port of the proxy inside a sandbox."""


def bridge_argv(python: str, socket_path: str, port: int, command: list[str]) -> list[str]:
    """The argv that runs ``command`` behind the bridge (see the module)."""
    return [python, "-I", "-S", "-c", SOURCE, socket_path, str(port), *command]


def proxy_environment(port: int = PORT) -> dict[str, str]:
    """The variables that send HTTP, HTTPS and SOCKS clients to the bridge: ``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY`` (``socks5h://``: names resolved by the proxy) in both cases,
    ``NO_PROXY`` empty (nothing goes direct), ``PI_NETWORK_PROXY``."""
    http = f"http://127.0.0.1:{port}"
    env = {"PI_NETWORK_PROXY": http}
    for name, value in (
        ("http_proxy", http),
        ("https_proxy", http),
        ("all_proxy", f"socks5h://127.0.0.1:{port}"),
        ("no_proxy", ""),
    ):
        env[name] = value
        env[name.upper()] = value
    return env


__all__ = ["PORT", "SOURCE", "bridge_argv", "proxy_environment"]
