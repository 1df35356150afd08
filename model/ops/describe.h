// A result type names its fields once, and its `--json` document (ops/describe_json.h) and its
// Python class (python/src/results.h) both follow from that one list, so the two cannot drift:
//
//     template <class V> static void describe(V& v)
//     {
//         v("tag", &ConsolidateResult::tag);                // a member
//         v("bytes_before", &SlimResult::bytesBefore);      // a const member function
//         v("status", statusOf);                            // any function of the result
//         v("alias_of", &TensorStats::aliasOf, isAlias);    // a field only some results have
//     }
//
// The key is the `--json` key and the Python attribute. A field's value is a string, a number, a
// bool, a Real, a Nullable, a std::optional (left out of the document when empty), a Keyed, a
// described type or a vector of any of these. A field with a third argument (a predicate of the
// result) is left out of the document where it is false, and is None in Python.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ckpt::ops {

// A floating-point number JSON cannot always hold: NaN and infinities are written as the strings
// "nan", "inf" and "-inf" (Python's json would write NaN, which many parsers refuse); Python gets
// the float itself.
struct Real
{
    double value = 0;
};

// A value that may be unknown: null in JSON, None in Python. (A std::optional field is instead
// left out of the document when empty.)
template <class T> struct Nullable
{
    std::optional<T> value;
};

// Values by name, in this order: an object in JSON, a dict in Python (a family's facts, a
// partition's optimizer states).
template <class T> struct Keyed
{
    std::vector<std::pair<std::string, T>> items;
};

// What describe() is handed to ask whether a type has one.
struct AnyField
{
    template <class... A> void operator()(const char*, A&&...) {}
};

template <class T> struct IsVector : std::false_type
{
};
template <class T> struct IsVector<std::vector<T>> : std::true_type
{
};
template <class T> struct IsOptional : std::false_type
{
};
template <class T> struct IsOptional<std::optional<T>> : std::true_type
{
};
template <class T> struct IsNullable : std::false_type
{
};
template <class T> struct IsNullable<Nullable<T>> : std::true_type
{
};

template <class T> struct IsKeyed : std::false_type
{
};
template <class T> struct IsKeyed<Keyed<T>> : std::true_type
{
};

template <class T>
concept Described = requires(AnyField& v)
{
    T::describe(v);
};

} // namespace ckpt::ops
