"""Primes, prime factors, gcd and lcm."""


def is_prime(number):
    if number < 2:
        return False
    if number % 2 == 0:
        return number == 2
    divisor = 3
    while divisor * divisor <= number:
        if number % divisor == 0:
            return False
        divisor += 2
    return True


def primes_up_to(limit):
    """Sieve of Eratosthenes: every prime not above limit."""
    if limit < 2:
        return []
    flags = [True] * (limit + 1)
    flags[0] = False
    flags[1] = False
    for number in range(2, int(limit ** 0.5) + 1):
        if flags[number]:
            for multiple in range(number * number, limit + 1, number):
                flags[multiple] = False
    return [number for number in range(limit + 1) if flags[number]]


def factorize(number):
    """Prime factors in increasing order, with repeats."""
    if number < 1:
        raise ValueError("number must be positive")
    factors = []
    divisor = 2
    while divisor * divisor <= number:
        while number % divisor == 0:
            factors.append(divisor)
            number //= divisor
        divisor += 1
    if number > 1:
        factors.append(number)
    return factors


def prime_powers(number):
    """Pairs (prime, power) for the factors of number."""
    pairs = []
    for factor in factorize(number):
        if pairs and pairs[-1][0] == factor:
            pairs[-1][1] += 1
        else:
            pairs.append([factor, 1])
    return [tuple(pair) for pair in pairs]


def count_divisors(number):
    total = 1
    for prime, power in prime_powers(number):
        total *= power + 1
    return total


def gcd(first, second):
    while second != 0:
        first, second = second, first % second
    return abs(first)


def lcm(first, second):
    if first == 0 or second == 0:
        return 0
    return abs(first * second) // gcd(first, second)


def next_prime(number):
    """The smallest prime greater than number."""
    candidate = number + 1
    while not is_prime(candidate):
        candidate += 1
    return candidate
