"""kshim's SCRAM client (its own upstream connections) against the RFC test vectors; no broker."""

from __future__ import annotations

import pytest

from shim.kafkaclient.sasl import SaslError, ScramClient


def test_scram_sha_256_rfc7677_vector():
    c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert c.client_first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = c.client_final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                           b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    c.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(SaslError):
        c.verify(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    with pytest.raises(SaslError):
        c.verify(b"e=invalid-proof")


def test_scram_rejects_a_server_nonce_that_does_not_extend_ours():
    c = ScramClient("SCRAM-SHA-512", "user", "pencil", nonce="abc")
    with pytest.raises(SaslError):
        c.client_final(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_scram_escapes_user_names():
    c = ScramClient("SCRAM-SHA-512", "a=b,c", "pw", nonce="n")
    assert c.client_first() == b"n,,n=a=3Db=2Cc,r=n"
