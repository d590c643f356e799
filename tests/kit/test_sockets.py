"""``iolab.kit.sockets``: the listener and the accept loop every server model shares."""

import errno
import socket
import time

from iolab.kit import sockets


def test_accept_waiting_takes_every_queued_connection_and_reports_running_out_of_descriptors() -> None:
    with sockets.open_listener() as listener:
        listener.setblocking(False)
        clients = [socket.create_connection(listener.getsockname()) for _ in range(3)]
        time.sleep(0.05)  # let the handshakes complete into the accept queue
        accepted, overloaded = sockets.accept_waiting(listener)
        assert (len(accepted), overloaded) == (3, False)
        for sock in accepted + clients:
            sock.close()

    class OutOfDescriptors:
        def accept(self):
            raise OSError(errno.EMFILE, "Too many open files")

    assert sockets.accept_waiting(OutOfDescriptors()) == ([], True)  # type: ignore[arg-type]
