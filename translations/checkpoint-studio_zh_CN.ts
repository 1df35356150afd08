<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name>ckpt::app::BloatView</name>
    <message>
        <location filename="../app/bloat_view.cpp" line="93" />
        <source>model weights</source>
        <translation>模型权重</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="95" />
        <source>fp32 masters</source>
        <translation>fp32 主权重</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="97" />
        <source>exp_avg</source>
        <translation>exp_avg</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="99" />
        <source>exp_avg_sq</source>
        <translation>exp_avg_sq</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="101" />
        <source>other optimizer state</source>
        <translation>其他优化器状态</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="103" />
        <location filename="../app/bloat_view.cpp" line="105" />
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="121" />
        <source>Slim...</source>
        <translation>精简...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="122" />
        <source>Write a copy in which every storage keeps only the bytes its views reach</source>
        <translation>写出一份副本，其中每个存储只保留其视图用到的字节</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="130" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="133" />
        <source>Files, most wasted first</source>
        <translation>文件（浪费最多的在前）</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="140" />
        <source>Bytes by role</source>
        <translation>按用途划分的字节</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="238" />
        <source>Storages</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="248" />
        <source>Select a file, a tag or a checkpoint to see where its bytes go.</source>
        <translation>选择一个文件、标签或检查点，查看其字节的去向。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="257" />
        <source>&lt;b&gt;%1&lt;/b&gt;: reading...</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：正在读取...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="258" />
        <location filename="../app/bloat_view.cpp" line="429" />
        <source>Reading %1</source>
        <translation>正在读取 %1</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="329" />
        <source>&lt;b&gt;%1&lt;/b&gt;: cancelled.</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：已取消。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="330" />
        <source>&lt;b&gt;%1&lt;/b&gt;: %2</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;：%2</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/bloat_view.cpp" line="369" />
        <source>&lt;b&gt;%1&lt;/b&gt;: %n file(s), %2 on disk.</source>
        <translation><numerusform>&lt;b&gt;%1&lt;/b&gt;：%n 个文件，磁盘占用 %2。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="372" />
        <source>No torch.save file here: nothing to slim.</source>
        <translation>这里没有 torch.save 文件：无可精简。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="375" />
        <source>&lt;span style="color:#d64f45"&gt;&lt;b&gt;%1 wasted&lt;/b&gt;&lt;/span&gt; (%2% of the storage bytes): no tensor view reaches them. Slim writes a copy without them (gaps inside a strided view stay, so that torch.load gives the same strides).</source>
        <translation>&lt;span style="color:#d64f45"&gt;&lt;b&gt;浪费 %1&lt;/b&gt;&lt;/span&gt;（占存储字节的 %2%）：没有任何张量视图用到这些字节。精简会写出不含它们的副本（带步长的视图内部的空隙会保留，以便 torch.load 得到相同的步长）。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="381" />
        <source>Nothing wasted: every storage byte is reached by a view.</source>
        <translation>没有浪费：每个存储字节都被某个视图用到。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="396" />
        <source>Storages: no torch.save file</source>
        <translation>存储：没有 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="413" />
        <source>%1 is not a torch.save file: it has no storages.</source>
        <translation>%1 不是 torch.save 文件：没有存储。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="427" />
        <source>Storages of %1: reading...</source>
        <translation>%1 的存储：正在读取...</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="444" />
        <source>Storages of %1: cancelled.</source>
        <translation>%1 的存储：已取消。</translation>
    </message>
    <message>
        <location filename="../app/bloat_view.cpp" line="445" />
        <source>Storages of %1: %2</source>
        <translation>%1 的存储：%2</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/bloat_view.cpp" line="452" />
        <source>Storages of %1: %n storage(s), %2 of %3 wasted</source>
        <translation><numerusform>%1 的存储：%n 个存储，%3 中浪费 %2</numerusform></translation>
    </message>
</context>
<context>
    <name>ckpt::app::DetailsPane</name>
    <message>
        <location filename="../app/details_pane.cpp" line="52" />
        <source>No data to read for this tensor.</source>
        <translation>此张量没有可读取的数据。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="54" />
        <source>This dtype has no statistics.</source>
        <translation>此数据类型没有统计信息。</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="72" />
        <source>First values: %1
min %2  max %3  mean %4  std %5
zeros %6  NaN %7  Inf %8</source>
        <translation>前几个值：%1
最小 %2  最大 %3  均值 %4  标准差 %5
零 %6  NaN %7  Inf %8</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="82" />
        <source>Could not compute: %1</source>
        <translation>无法计算：%1</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Rank</source>
        <translation>Rank</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <location filename="../app/details_pane.cpp" line="169" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Offset</source>
        <translation>偏移</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Length</source>
        <translation>长度</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="96" />
        <source>Padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="101" />
        <source>Search the configuration</source>
        <translation>搜索配置</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="104" />
        <source>Show values and statistics</source>
        <translation>显示数值和统计</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="151" />
        <source>&lt;p&gt;Select an item to see its details.&lt;/p&gt;</source>
        <translation>&lt;p&gt;选择一个项目以查看详细信息。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="155" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="157" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="157" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="158" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="159" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="162" />
        <source>Stride</source>
        <translation>步长</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="163" />
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="164" />
        <source>record %1, offset %2, %3</source>
        <translation>记录 %1，偏移 %2，%3</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="168" />
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="174" />
        <source>Shares storage with</source>
        <translation>与以下张量共享存储</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="180" />
        <source>Tied to</source>
        <translation>绑定到</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="181" />
        <source>Flat group</source>
        <translation>扁平分组</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="200" />
        <source>Optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="215" />
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="216" />
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../app/details_pane.cpp" line="233" />
        <source>Computing...</source>
        <translation>正在计算...</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="36" />
        <source>DeepSpeed checkpoint</source>
        <translation>DeepSpeed 检查点</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="37" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="38" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="39" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="40" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="41" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="42" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="43" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="44" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="45" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="46" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="47" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="48" />
        <source>model states</source>
        <translation>模型状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="49" />
        <source>optimizer states</source>
        <translation>优化器状态文件</translation>
    </message>
</context>
<context>
    <name>ckpt::app::ExportDialog</name>
    <message>
        <location filename="../app/export_dialog.cpp" line="30" />
        <source>Export consolidated model</source>
        <translation>导出合并后的模型</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="40" />
        <source>Leave out frozen parameters</source>
        <translation>不包含冻结参数</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="42" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="46" />
        <source>Tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="47" />
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="48" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="49" />
        <source>Largest shard</source>
        <translation>最大分片</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="51" />
        <location filename="../app/export_dialog.cpp" line="72" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="56" />
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="57" />
        <location filename="../app/export_dialog.cpp" line="180" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="58" />
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="87" />
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/export_dialog.cpp" line="90" />
        <source>Wrote %n file(s) to %1 in %2 s.</source>
        <translation><numerusform>已将 %n 个文件写入 %1，用时 %2 秒。</numerusform></translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="96" />
        <source>Cancelled; nothing was left behind.</source>
        <translation>已取消，没有留下任何输出。</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="99" />
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="123" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="138" />
        <source>%1: %2 of %3, %4 GB/s, %5 s left</source>
        <translation>%1：%2 / %3，%4 GB/s，剩余 %5 秒</translation>
    </message>
    <message>
        <location filename="../app/export_dialog.cpp" line="149" />
        <source>Choose an output folder first.</source>
        <translation>请先选择输出文件夹。</translation>
    </message>
</context>
<context>
    <name>ckpt::app::FileBars</name>
    <message>
        <location filename="../app/bloat_bars.cpp" line="109" />
        <source>%1, not a torch.save file</source>
        <translation>%1，不是 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="110" />
        <source>%1, nothing wasted</source>
        <translation>%1，没有浪费</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="111" />
        <source>%1, %2 wasted (%3%)</source>
        <translation>%1，浪费 %2（%3%）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="125" />
        <source>not a torch.save file</source>
        <translation>不是 torch.save 文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="127" />
        <source>used by a view</source>
        <translation>被视图使用</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="128" />
        <source>wasted (no view reaches it)</source>
        <translation>浪费（没有视图用到）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="129" />
        <source>overhead (pickle, zip records)</source>
        <translation>开销（pickle、zip 记录）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="132" />
        <source>file</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="157" />
        <source>used</source>
        <translation>已使用</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="158" />
        <source>wasted</source>
        <translation>浪费</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="159" />
        <source>overhead</source>
        <translation>开销</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="161" />
        <source>other file</source>
        <translation>其他文件</translation>
    </message>
</context>
<context>
    <name>ckpt::app::MainWindow</name>
    <message>
        <location filename="../app/main_window.cpp" line="50" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="58" />
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="59" />
        <source>Open &amp;Folder...</source>
        <translation>打开文件夹(&amp;F)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="60" />
        <source>Open checkpoint folder</source>
        <translation>打开检查点文件夹</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="63" />
        <source>&amp;Open File...</source>
        <translation>打开文件(&amp;O)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="65" />
        <source>Open checkpoint file</source>
        <translation>打开检查点文件</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="66" />
        <source>Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)</source>
        <translation>检查点 (*.pt *.pth *.bin *.ckpt *.safetensors);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="69" />
        <source>&amp;Export Model...</source>
        <translation>导出模型(&amp;E)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="71" />
        <source>&amp;Slim...</source>
        <translation>精简(&amp;S)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="78" />
        <source>Write a copy whose storages keep only the bytes their tensors view</source>
        <translation>写出一份副本，其存储只保留张量视图用到的字节</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="80" />
        <source>&amp;Bloat of a Folder...</source>
        <translation>分析文件夹的膨胀(&amp;B)...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="83" />
        <source>Folder to analyse</source>
        <translation>要分析的文件夹</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="87" />
        <source>Start &amp;Page</source>
        <translation>起始页(&amp;P)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="88" />
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="89" />
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="98" />
        <source>Bloat</source>
        <translation>膨胀分析</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="104" />
        <source>&amp;Bloat</source>
        <translation>膨胀分析(&amp;B)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="107" />
        <source>Where the bytes of the selected file, tag or checkpoint go, and how many are wasted</source>
        <translation>所选文件、标签或检查点的字节去向，以及浪费了多少</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="108" />
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="122" />
        <source>%1 is not open in the tree</source>
        <translation>%1 未在树中打开</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="130" />
        <source>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;Open a checkpoint folder or file, drop one here, or pick a recent item.&lt;/p&gt;</source>
        <translation>&lt;h2&gt;Checkpoint Studio&lt;/h2&gt;&lt;p&gt;打开检查点文件夹或文件，拖放到此处，或选择最近打开的项目。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="134" />
        <source>Open the bundled example</source>
        <translation>打开自带示例</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="149" />
        <source>Filter by name (wildcards, or a regular expression)</source>
        <translation>按名称筛选（通配符或正则表达式）</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="150" />
        <source>Regular expression</source>
        <translation>正则表达式</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="192" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="198" />
        <source>Opening cancelled</source>
        <translation>已取消打开</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="208" />
        <source>Compute: %1</source>
        <translation>计算设备：%1</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="226" />
        <source>Opening %1...</source>
        <translation>正在打开 %1...</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="250" />
        <source>Cannot open: %1</source>
        <translation>无法打开：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/main_window.cpp" line="269" />
        <source>&lt;b&gt;%n warning(s)&lt;/b&gt;&lt;br&gt;</source>
        <translation><numerusform>&lt;b&gt;%n 条警告&lt;/b&gt;&lt;br&gt;</numerusform></translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="281" />
        <source>%1 - Checkpoint Studio</source>
        <translation>%1 - Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main_window.cpp" line="282" />
        <source>Opened %1</source>
        <translation>已打开 %1</translation>
    </message>
</context>
<context>
    <name>ckpt::app::RoleBar</name>
    <message>
        <location filename="../app/bloat_bars.cpp" line="266" />
        <source>%1: %2 (%3%)</source>
        <translation>%1：%2（%3%）</translation>
    </message>
    <message>
        <location filename="../app/bloat_bars.cpp" line="379" />
        <source>%1: %2 bytes (%3), %4% of %5</source>
        <translation>%1：%2 字节（%3），占 %5 的 %4%</translation>
    </message>
</context>
<context>
    <name>ckpt::app::SlimDialog</name>
    <message>
        <location filename="../app/slim_dialog.cpp" line="64" />
        <source>%1 → %2, %3 saved (%4%)</source>
        <translation>%1 → %2，节省 %3（%4%）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="74" />
        <source>Slim %1</source>
        <translation>精简 %1</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="77" />
        <source>Writes a copy of this folder in which every torch.save file keeps, of each storage, only the bytes its tensors view. Other files are copied. torch.load gives the same tensors; the input is not changed.</source>
        <translation>写出此文件夹的副本，其中每个 torch.save 文件的每个存储只保留其张量视图用到的字节。其他文件原样复制。torch.load 得到的张量相同；输入不会被修改。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="80" />
        <source>Writes a copy of this file in which each storage keeps only the bytes its tensors view. torch.load gives the same tensors; the input is not changed.</source>
        <translation>写出此文件的副本，其中每个存储只保留其张量视图用到的字节。torch.load 得到的张量相同；输入不会被修改。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="89" />
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="93" />
        <source>Input</source>
        <translation>输入</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="94" />
        <location filename="../app/slim_dialog.cpp" line="137" />
        <source>Output folder</source>
        <translation>输出文件夹</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="94" />
        <location filename="../app/slim_dialog.cpp" line="137" />
        <source>Output file</source>
        <translation>输出文件</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="100" />
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="100" />
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="100" />
        <source>Before</source>
        <translation>之前</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="100" />
        <source>Predicted</source>
        <translation>预计</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="100" />
        <source>After</source>
        <translation>之后</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="114" />
        <source>Slim</source>
        <translation>精简</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="116" />
        <location filename="../app/slim_dialog.cpp" line="339" />
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="117" />
        <source>Open in window</source>
        <translation>在窗口中打开</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="156" />
        <source>Cannot predict: %1</source>
        <translation>无法预计：%1</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="163" />
        <source>Predicted: %1.</source>
        <translation>预计：%1。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="164" />
        <source>Predicted: nothing to gain, %1 would be copied as it is.</source>
        <translation>预计：无可节省，%1 将原样复制。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="173" />
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="178" />
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="179" />
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="180" />
        <source>Done in %1: %2. Written to %3.</source>
        <translation>完成，用时 %1：%2。已写入 %3。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="186" />
        <source>Cancelled; nothing was left behind.</source>
        <translation>已取消，没有留下任何输出。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="191" />
        <source>Slim failed</source>
        <translation>精简失败</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="192" />
        <source>Slimming failed.</source>
        <translation>精简失败。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="193" />
        <source>Slimming failed on %1.</source>
        <translation>精简 %1 时失败。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="238" />
        <source>slimmed</source>
        <translation>已精简</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="239" />
        <source>copied (not bloated)</source>
        <translation>已复制（没有膨胀）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="241" />
        <source>copied (not a torch.save file)</source>
        <translation>已复制（不是 torch.save 文件）</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="258" />
        <location filename="../app/slim_dialog.cpp" line="259" />
        <source>%1 bytes</source>
        <translation>%1 字节</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="265" />
        <source>Predicting the savings...</source>
        <translation>正在预计可节省的空间...</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="278" />
        <source>Cancelling...</source>
        <translation>正在取消...</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="304" />
        <source>%1: %2 of %3, %4 GB/s, %5 s left</source>
        <translation>%1：%2 / %3，%4 GB/s，剩余 %5 秒</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="315" />
        <source>Choose an output folder first.</source>
        <translation>请先选择输出文件夹。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="316" />
        <source>Choose an output file first.</source>
        <translation>请先选择输出文件。</translation>
    </message>
    <message>
        <location filename="../app/slim_dialog.cpp" line="341" />
        <source>Starting...</source>
        <translation>正在开始...</translation>
    </message>
</context>
<context>
    <name>ckpt::app::StorageModel</name>
    <message>
        <location filename="../app/storage_model.cpp" line="67" />
        <source>%1
%2 %3, %4 bytes of elements
Click to select it in the tree.</source>
        <translation>%1
%2 %3，元素共 %4 字节
单击可在树中选中它。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="100" />
        <source>%1: %2 bytes, %3 reached by its views, %4 wasted</source>
        <translation>%1：%2 字节，视图用到 %3，浪费 %4</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="104" />
        <source>Reached by something other than a plain view: all of it counts.</source>
        <translation>被普通视图以外的方式使用：全部计为已使用。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="106" />
        <source>A view of storage %1: its bytes are counted there.</source>
        <translation>存储 %1 的视图：其字节计入该存储。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="108" />
        <source>A view too fragmented to enumerate is counted by its hull.</source>
        <translation>过于零碎、无法逐段列出的视图按其覆盖范围计算。</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="122" />
        <source>a view of storage %1</source>
        <translation>存储 %1 的视图</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="124" />
        <source>no tensor (saved for itself)</source>
        <translation>无张量（单独保存）</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/storage_model.cpp" line="125" />
        <source>%n tensor(s)</source>
        <translation><numerusform>%n 个张量</numerusform></translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="135" />
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="137" />
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="139" />
        <source>Used</source>
        <translation>已使用</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="141" />
        <source>% used</source>
        <translation>使用率</translation>
    </message>
    <message>
        <location filename="../app/storage_model.cpp" line="143" />
        <source>Tensors</source>
        <translation>张量</translation>
    </message>
</context>
<context>
    <name>ckpt::app::TreeModel</name>
    <message>
        <location filename="../app/tree_model.cpp" line="139" />
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="141" />
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="143" />
        <source>dtype</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="145" />
        <source>Shape</source>
        <translation>形状</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="147" />
        <source>Elements</source>
        <translation>元素数</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="149" />
        <source>Bytes</source>
        <translation>字节</translation>
    </message>
    <message>
        <location filename="../app/tree_model.cpp" line="151" />
        <source>Ranks</source>
        <translation>Rank 数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="16" />
        <source>DeepSpeed checkpoint</source>
        <translation>DeepSpeed 检查点</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="17" />
        <source>configuration</source>
        <translation>配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="18" />
        <source>rank files</source>
        <translation>各 rank 文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="19" />
        <source>tag</source>
        <translation>标签</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="20" />
        <source>tag (latest)</source>
        <translation>标签（最新）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="21" />
        <source>ds_config</source>
        <translation>ds_config 配置</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="22" />
        <source>files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="23" />
        <source>parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="24" />
        <source>parameter</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="25" />
        <source>parameter (frozen)</source>
        <translation>参数（冻结）</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="26" />
        <source>tied parameter</source>
        <translation>绑定参数</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="27" />
        <source>buffer</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="28" />
        <source>optimizer state</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="29" />
        <source>tensor</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="30" />
        <source>model states</source>
        <translation>模型状态</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="31" />
        <source>optimizer states</source>
        <translation>优化器状态文件</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="32" />
        <source>pipeline layer</source>
        <translation>流水线层</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="33" />
        <source>MoE expert</source>
        <translation>MoE 专家</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="34" />
        <source>MoE expert optimizer</source>
        <translation>MoE 专家优化器</translation>
    </message>
    <message>
        <location filename="../app/kinds.cpp" line="35" />
        <source>other</source>
        <translation>其他</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <location filename="../app/main.cpp" line="114" />
        <source>Checkpoint Studio</source>
        <translation>Checkpoint Studio</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="126" />
        <source>Inspect, consolidate and convert training checkpoints</source>
        <translation>查看、合并和转换训练检查点</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="131" />
        <source>Save a screenshot of the window once PATH is open, then exit.</source>
        <translation>打开 PATH 后保存窗口截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="134" />
        <source>Select this item of the tree first.</source>
        <translation>先在树中选中此项目。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="138" />
        <source>Save a screenshot of the export dialog while it runs, then exit.</source>
        <translation>导出运行时保存导出对话框的截图并退出。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="142" />
        <source>Colours: system (follow the desktop), light or dark. The default is the "palette" setting, else system.</source>
        <translation>配色：system（跟随桌面）、light（浅色）或 dark（深色）。默认取 "palette" 设置，否则为 system。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="151" />
        <source>Show where the bytes of this file or folder go (the Bloat view). With --screenshot, save the window once that is computed; with --screenshot-export, the Slim dialog once it has slimmed it into a temporary folder.</source>
        <translation>在膨胀分析视图中显示此文件或文件夹的字节去向。配合 --screenshot 时，计算完成后保存窗口截图；配合 --screenshot-export 时，将其精简到临时文件夹后保存精简对话框的截图。</translation>
    </message>
    <message>
        <location filename="../app/main.cpp" line="159" />
        <source>Checkpoint folder or file to open.</source>
        <translation>要打开的检查点文件夹或文件。</translation>
    </message>
</context>
</TS>