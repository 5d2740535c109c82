// JSON text helpers shared by the test apps printing JSON lines (compiled with them: javac -sourcepath
// testsuite/java, see testsuite/harness/javaapps.py compile_app).
public final class JsonText {
    private JsonText() { }

    /** A JSON string literal of s ("null" for null). */
    public static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
