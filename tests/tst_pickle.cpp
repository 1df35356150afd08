// The pickle VM on streams written by CPython's own pickler (protocols 0-5), the byte-exact
// torch example from the spec, and hostile streams. Nothing is ever executed.
#include "pickle/machine.h"
#include "pickle/safety.h"
#include "torch/torch_file.h"

#include <QByteArray>
#include <QTest>

using namespace ckpt;
using pickle::Kind;

namespace {

std::vector<uint8_t> hex(const char* h)
{
    const QByteArray b = QByteArray::fromHex(h);
    return {b.begin(), b.end()};
}

struct Parsed
{
    pickle::Arena arena;
    pickle::Result result;
};

std::unique_ptr<Parsed> run(const std::vector<uint8_t>& bytes, const pickle::Limits& limits = {})
{
    auto p = std::make_unique<Parsed>();
    p->result = pickle::parse({bytes.data(), bytes.size()}, p->arena, {}, limits);
    return p;
}

std::string errorOf(const std::vector<uint8_t>& bytes, const pickle::Limits& limits = {})
{
    try {
        run(bytes, limits);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

// The same list pickled by CPython 3.11 with protocols 0..5.
const char* kProtocols[] = {
    "286c70300a49310a61492d310a61493330300a614937303030300a6146322e350a61566162630a70310a61565c75323061630a70"
    "320a614c313236373635303630303232383232393430313439363730333230353337364c0a614c2d313834343637343430373337"
    "30393535313631364c0a614e614930310a614930300a61635f636f646563730a656e636f64650a70330a285678790a70340a566c"
    "6174696e310a70350a7470360a5270370a61286470380a566b0a70390a2849310a49320a747031300a7361635f5f6275696c7469"
    "6e5f5f0a7365740a7031310a28286c7031320a49310a61747031330a527031340a61635f5f6275696c74696e5f5f0a66726f7a65"
    "6e7365740a7031350a28286c7031360a49320a61747031370a527031380a61635f5f6275696c74696e5f5f0a6279746561727261"
    "790a7031390a2867330a28567a0a7032300a67350a747032310a527032320a747032330a527032340a612874612849310a747032"
    "350a612849310a49320a49330a49340a747032360a612e",
    "5d7100284b014affffffff4d2c014a70110100474004000000000000580300000061626371015803000000e282ac71024c313236"
    "373635303630303232383232393430313439363730333230353337364c0a4c2d3138343436373434303733373039353531363136"
    "4c0a4e4930310a4930300a635f636f646563730a656e636f64650a71032858020000007879710458060000006c6174696e317105"
    "7471065271077d710858010000006b7109284b014b0274710a73635f5f6275696c74696e5f5f0a7365740a710b285d710c4b0161"
    "74710d52710e635f5f6275696c74696e5f5f0a66726f7a656e7365740a710f285d71104b0261747111527112635f5f6275696c74"
    "696e5f5f0a6279746561727261790a71132868032858010000007a7114680574711552711674711752711829284b01747119284b"
    "014b024b034b0474711a652e",
    "80025d7100284b014affffffff4d2c014a70110100474004000000000000580300000061626371015803000000e282ac71028a0d"
    "000000000000000000000000108a090000000000000000ff4e8889635f636f646563730a656e636f64650a710358020000007879"
    "710458060000006c6174696e3171058671065271077d710858010000006b71094b014b0286710a73635f5f6275696c74696e5f5f"
    "0a7365740a710b5d710c4b016185710d52710e635f5f6275696c74696e5f5f0a66726f7a656e7365740a710f5d71104b02618571"
    "11527112635f5f6275696c74696e5f5f0a6279746561727261790a7113680358010000007a711468058671155271168571175271"
    "18294b01857119284b014b024b034b0474711a652e",
    "80035d7100284b014affffffff4d2c014a70110100474004000000000000580300000061626371015803000000e282ac71028a0d"
    "000000000000000000000000108a090000000000000000ff4e88894302787971037d710458010000006b71054b014b0286710673"
    "636275696c74696e730a7365740a71075d71084b016185710952710a636275696c74696e730a66726f7a656e7365740a710b5d71"
    "0c4b026185710d52710e636275696c74696e730a6279746561727261790a710f43017a7110857111527112294b01857113284b01"
    "4b024b034b04747114652e",
    "80049594000000000000005d94284b014affffffff4d2c014a701101004740040000000000008c03616263948c03e282ac948a0d"
    "000000000000000000000000108a090000000000000000ff4e888943027879947d948c016b944b014b028694738f94284b019028"
    "4b0291948c086275696c74696e73948c0962797465617272617994939443017a9485945294294b018594284b014b024b034b0474"
    "94652e",
    "8005957e000000000000005d94284b014affffffff4d2c014a701101004740040000000000008c03616263948c03e282ac948a0d"
    "000000000000000000000000108a090000000000000000ff4e888943027879947d948c016b944b014b028694738f94284b019028"
    "4b0291949601000000000000007a94294b018594284b014b024b034b047494652e",
};
// repr() of that list in CPython.
const char* kPythonRepr =
    "[1, -1, 300, 70000, 2.5, 'abc', '€', 1267650600228229401496703205376, "
    "-18446744073709551616, None, True, False, b'xy', {'k': (1, 2)}, {1}, frozenset({2}), "
    "bytearray(b'z'), (), (1,), (1, 2, 3, 4)]";

} // namespace

class TestPickle : public QObject
{
    Q_OBJECT
private slots:
    void everyProtocolGivesPythonsValue_data()
    {
        QTest::addColumn<int>("protocol");
        for (int p = 0; p <= 5; ++p)
            QTest::newRow(("protocol " + std::to_string(p)).c_str()) << p;
    }
    void everyProtocolGivesPythonsValue()
    {
        QFETCH(int, protocol);
        auto p = run(hex(kProtocols[protocol]));
        QCOMPARE(torch::pyRepr(p->result.root, 1000), std::string(kPythonRepr));
        QCOMPARE(p->result.protocol, protocol >= 2 ? protocol : 0);
    }

    void instancesBecomeInspectableNodes()
    {
        // class Obj with a=1, b=[2], pickled by protocols 0 (copy_reg._reconstructor + BUILD) and 2 (NEWOBJ).
        for (const char* h : {"63636f70795f7265670a5f7265636f6e7374727563746f720a70300a28635f5f6d61696e5f5f0a"
                              "4f626a0a70310a635f5f6275696c74696e5f5f0a6f626a6563740a70320a4e7470330a5270340a"
                              "286470350a56610a70360a49310a7356620a70370a286c70380a49320a6173622e",
                              "8002635f5f6d61696e5f5f0a4f626a0a7100298171017d71022858010000006171034b01580100"
                              "00006271045d71054b026175622e"}) {
            auto p = run(hex(h));
            const pickle::Value* v = p->result.root;
            QCOMPARE(v->kind, Kind::Call);
            QVERIFY(v->state && v->state->kind == Kind::Dict);
            QCOMPARE(torch::pyRepr(v->state), std::string("{'a': 1, 'b': [2]}"));
            bool sawObj = false;
            for (const auto& g : p->result.globals)
                sawObj |= g.module == "__main__" && g.name == "Obj";
            QVERIFY(sawObj);
        }
        // Python-2 spellings are normalised: copy_reg -> copyreg, __builtin__ -> builtins.
        auto p = run(hex(kProtocols[0]));
        for (const auto& g : p->result.globals)
            QVERIFY(g.module != "__builtin__");
    }

    void torchGoldenExample()
    {
        // Spec section 3.11: the 290-byte data.pkl of a two-tensor state dict with _metadata.
        const auto bytes =
            hex("800263636f6c6c656374696f6e730a4f726465726564446963740a71002952710128580600000077656967687471"
                "0263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f"
                "72616765710463746f7263680a466c6f617453746f726167650a7105580100000030710658030000006370757107"
                "4b06747108514b004b024b038671094b034b0186710a8968002952710b74710c52710d580400000062696173710e"
                "6803282868046805580100000031710f68074b02747110514b004b028571114b0185711289680029527113747114"
                "527115757d711658090000005f6d657461646174617117680029527118580000000071197d711a58070000007665"
                "7273696f6e711b4b01737373622e");
        QCOMPARE(bytes.size(), size_t(290));
        pickle::Arena arena;
        std::vector<std::string> pids;
        auto r = pickle::parse({bytes.data(), bytes.size()}, arena, [&](const pickle::Value* pid) {
            pids.push_back(torch::pyRepr(pid));
            return int64_t(pids.size() - 1);
        });
        QCOMPARE(pids.size(), size_t(2));
        QCOMPARE(pids[0], std::string("('storage', torch.FloatStorage, '0', 'cpu', 6)"));
        QCOMPARE(pids[1], std::string("('storage', torch.FloatStorage, '1', 'cpu', 2)"));
        QVERIFY(r.root->calls("collections", "OrderedDict"));
        QCOMPARE(r.root->entries.size(), size_t(2));
        QVERIFY(r.root->entries[0].second->calls("torch._utils", "_rebuild_tensor_v2"));
        QCOMPARE(torch::pyRepr(r.root->state), std::string("{'_metadata': collections.OrderedDict()}"));
        QCOMPARE(r.end, uint64_t(290));
    }

    void rareOpcodes()
    {
        // EXT1 code 5 -> opaque Ext; PERSID text id; DUP; POP_MARK; OBJ; INST; frozenset; LONG4.
        auto p = run(hex("80028205"
                         "2e"));
        QCOMPARE(p->result.root->kind, Kind::Ext);
        QCOMPARE(p->result.root->integer, int64_t(5));
        p = run(hex("5031320a2e")); // PERSID '12'
        QCOMPARE(p->result.root->kind, Kind::PersistentRef);
        p = run(hex("4b0132862e")); // BININT1 1, DUP, TUPLE2 -> (1, 1)
        QCOMPARE(torch::pyRepr(p->result.root), std::string("(1, 1)"));
        p = run(hex("4b07284b014b0231"
                    "2e")); // 7, MARK 1 2 POP_MARK -> 7
        QCOMPARE(torch::pyRepr(p->result.root), std::string("7"));
        p = run(hex("285661620a696f730a73797374656d0a2e")); // MARK 'ab' INST os.system -- never run
        QCOMPARE(p->result.root->kind, Kind::Call);
        QVERIFY(p->result.root->callable->isGlobal("os", "system"));
        QCOMPARE(pickle::classifyGlobal("os", "system"), pickle::Safety::Dangerous);
        p = run(hex("8b0300000000ff7f2e")); // LONG4 3 bytes: 0x7fff00 = 8388352
        QCOMPARE(torch::pyRepr(p->result.root), std::string("8388352"));
        p = run(hex("8004288c01618c016291"
                    "2e")); // frozenset({'a','b'})
        QCOMPARE(p->result.root->kind, Kind::FrozenSet);
        QVERIFY(errorOf(hex("46312e3235650a2e")).find("FLOAT") != std::string::npos); // '1.25e'
    }

    // The memo as Python's dict: BINPUT overwrites a key (not counted twice), MEMOIZE uses
    // len(memo) as its key, a sparse LONG_BINPUT key counts too (results from CPython 3.11).
    void memoFollowsPython()
    {
        auto p = run(hex("8004284b01944b0271004b03944b0472a08601004b0594680068016aa0860100680374"
                         "2e"));
        QCOMPARE(torch::pyRepr(p->result.root), std::string("(1, 2, 3, 4, 5, 2, 3, 4, 5)"));
        // LONG_BINPUT 100000 then MEMOIZE stores at key 1 (len(memo)), so key 0 was never stored.
        QVERIFY(errorOf(hex("80044b0172a08601004b02946aa0860100680086"
                            "2e"))
                    .find("memo key 0 was never stored") != std::string::npos);
    }

    void outOfBandBuffersAreRejected()
    {
        QVERIFY(errorOf(hex("800597"
                            "2e"))
                    .find("NEXT_BUFFER") != std::string::npos);
        QVERIFY(errorOf(hex("80054301789498"
                            "2e"))
                    .find("READONLY_BUFFER") != std::string::npos);
    }

    void hostileStreams()
    {
        QVERIFY(errorOf({}).find("truncated") != std::string::npos);
        QVERIFY(errorOf(hex("8006")).find("unsupported pickle protocol 6") != std::string::npos);
        QVERIFY(errorOf(hex("6803"
                            "2e"))
                    .find("never stored") != std::string::npos);
        QVERIFY(errorOf(hex("52"
                            "2e"))
                    .find("underflow") != std::string::npos);
        QVERIFY(errorOf(hex("8b ffffffff 2e")).find("negative LONG4") != std::string::npos);
        QVERIFY(errorOf(hex("4b014b0161"
                            "2e"))
                    .find("not a list") != std::string::npos); // APPEND to an int
        QVERIFY(errorOf(hex("95ffffffffffffff7f")).find("FRAME") !=
                std::string::npos); // frame longer than input
        QVERIFY(errorOf(hex("8c01618c016293"
                            "2e"))
                    .find("no error") != std::string::npos);
        QVERIFY(errorOf(hex("4b014b0193"
                            "2e"))
                    .find("not strings") != std::string::npos);
        // Node limit: a 2000-item list under a 100-node limit.
        std::vector<uint8_t> big = {0x80, 0x02, ']', '('};
        for (int i = 0; i < 2000; ++i)
            big.insert(big.end(), {0x4b, 0x01});
        big.insert(big.end(), {'e', '.'});
        pickle::Limits small;
        small.maxNodes = 100;
        QVERIFY(errorOf(big, small).find("limit") != std::string::npos);
        QCOMPARE(errorOf(big), std::string("no error"));
    }

    void bigIntegers()
    {
        QCOMPARE(
            torch::bigIntToDecimal(std::string("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10", 13)),
            std::string("1267650600228229401496703205376"));
        QCOMPARE(torch::bigIntToDecimal(std::string("\xff", 1)), std::string("-1"));
        QCOMPARE(torch::bigIntToDecimal(std::string(600, '\x01')), std::string("<int of 4800 bits>"));
    }

    void globalClassification()
    {
        using pickle::Safety;
        QCOMPARE(pickle::classifyGlobal("posix", "system"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("builtins", "eval"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("builtins", "getattr"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("subprocess", "Popen"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("runpy", "_run_code"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("webbrowser", "open"), Safety::Dangerous);
        QCOMPARE(pickle::classifyGlobal("torch._utils", "_rebuild_tensor_v2"), Safety::TensorSafe);
        QCOMPARE(pickle::classifyGlobal("torch", "BFloat16Storage"), Safety::TensorSafe);
        QCOMPARE(pickle::classifyGlobal("collections", "OrderedDict"), Safety::TensorSafe);
        QCOMPARE(pickle::classifyGlobal("argparse", "Namespace"), Safety::Opaque);
        std::string m = "__builtin__", n = "eval";
        pickle::normaliseGlobal(m, n);
        QCOMPARE(m, std::string("builtins"));
        m = "__builtin__", n = "unicode";
        pickle::normaliseGlobal(m, n);
        QCOMPARE(m + "." + n, std::string("builtins.str"));
    }

    void longTextIsTheShortestTwosComplement()
    {
        // Protocol 0/1 spell torch's legacy magic number as LONG text; it must be the same bytes
        // as protocol 2's LONG1 (the legacy reader compares them).
        const std::string text = "L119547037146038801333356L\n.";
        const auto p = run({text.begin(), text.end()});
        QCOMPARE(int(p->result.root->kind), int(Kind::BigInt));
        QCOMPARE(p->result.root->text, std::string("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10));
        const std::string neg = "L-129L\n.";
        const auto n = run({neg.begin(), neg.end()});
        QCOMPARE(n->result.root->integer, int64_t(-129));
        const std::string big = "L-18446744073709551616L\n."; // -2**64
        const auto b = run({big.begin(), big.end()});
        QCOMPARE(b->result.root->text, std::string("\0\0\0\0\0\0\0\0\xff", 9));
    }
};

QTEST_APPLESS_MAIN(TestPickle)
#include "tst_pickle.moc"
