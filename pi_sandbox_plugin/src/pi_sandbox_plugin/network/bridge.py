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
virtual environment, and imports only built-in modules (``_socket``, ``_thread``, ``_signal``:
its start costs a bare interpreter's).
"""

from __future__ import annotations

SOURCE = r"""
import os, sys, _signal, _socket, _thread

def pump(src, dst, done):
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
            dst.shutdown(_socket.SHUT_WR)
        except OSError:
            pass
        if done is not None:
            done.release()

def pair(fd, path):
    client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
    try:
        upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        upstream.connect(path)
    except OSError:
        client.close()
        return
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(pump, (upstream, client, done))
    pump(client, upstream, None)
    done.acquire()
    client.close()
    upstream.close()

def serve(server, path):
    while True:
        try:
            fd, _ = server._accept()
        except OSError:
            return
        _thread.start_new_thread(pair, (fd, path))

def main():
    path, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    server.bind(('127.0.0.1', port))
    server.listen(128)
    if port == 0:
        os.write(1, b'%d\n' % server.getsockname()[1])
    pid = os.fork()
    if pid == 0:
        server.close()
        try:
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, ('pi network bridge: %s: %s\n' % (command[0], error.strerror)).encode())
            os._exit(127)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    _thread.start_new_thread(serve, (server, path))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        _signal.signal(number, _signal.SIG_DFL)
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
