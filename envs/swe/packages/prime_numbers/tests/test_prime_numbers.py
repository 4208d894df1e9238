import pytest

from prime_numbers import count_divisors, factorize, gcd, is_prime, lcm
from prime_numbers import next_prime, prime_powers, primes_up_to


def test_is_prime_small():
    assert [x for x in range(20) if is_prime(x)] == [2, 3, 5, 7, 11, 13, 17, 19]


def test_is_prime_large():
    assert is_prime(7919)
    assert not is_prime(7917)
    assert not is_prime(25)
    assert not is_prime(-7)


def test_primes_up_to():
    assert primes_up_to(30) == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    assert primes_up_to(2) == [2]
    assert primes_up_to(1) == []
    assert primes_up_to(49)[-1] == 47


def test_sieve_matches_test():
    assert primes_up_to(200) == [x for x in range(201) if is_prime(x)]


def test_factorize():
    assert factorize(360) == [2, 2, 2, 3, 3, 5]
    assert factorize(97) == [97]
    assert factorize(1) == []
    assert factorize(221) == [13, 17]
    with pytest.raises(ValueError):
        factorize(0)


def test_prime_powers_and_divisors():
    assert prime_powers(360) == [(2, 3), (3, 2), (5, 1)]
    assert count_divisors(360) == 24
    assert count_divisors(1) == 1
    assert count_divisors(13) == 2


def test_gcd():
    assert gcd(48, 36) == 12
    assert gcd(17, 5) == 1
    assert gcd(0, 9) == 9
    assert gcd(-8, 12) == 4


def test_lcm():
    assert lcm(4, 6) == 12
    assert lcm(7, 3) == 21
    assert lcm(0, 5) == 0
    assert lcm(-4, 6) == 12


def test_next_prime():
    assert next_prime(1) == 2
    assert next_prime(2) == 3
    assert next_prime(13) == 17
    assert next_prime(89) == 97
