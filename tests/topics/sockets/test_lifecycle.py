from iolab.topics.sockets import lifecycle


def test_walk_through_shows_the_textbook_states_in_order():
    df = lifecycle.walk_through()
    states = df.groupby("step", sort=False).state.apply(set)
    steps = list(states.index)
    assert states.iloc[0] == {""}  # a socket only bound is not listed
    assert states.iloc[1] == {"LISTEN"}
    connected = df[df.step == steps[2]]
    assert set(connected.state) == {"LISTEN", "ESTABLISHED"}
    assert connected[connected.state == "LISTEN"].recv_q.item() == 1  # completed, not yet accepted
    assert df[df.step == steps[4]].recv_q.max() == 5  # b"hello" waiting in the server's buffer
    # The closer's side is FIN_WAIT1 until the peer's ACK is processed, then FIN_WAIT2.
    assert "CLOSE_WAIT" in states.iloc[6] and states.iloc[6] & {"FIN_WAIT1", "FIN_WAIT2"}
    assert "TIME_WAIT" in states.iloc[7]


def test_walk_through_waits_until_the_closer_has_the_ack_of_its_fin():
    """The server's kernel delays that ACK (at most 200 ms): the closer's FIN_WAIT1 in the table was a race."""
    df = lifecycle.walk_through()
    closed = df[df.step == df.step.unique()[6]]
    assert closed[closed.socket == "client"].state.item() == "FIN_WAIT2"
